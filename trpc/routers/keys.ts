import { createKey } from "../../src/services/keys/create-key";
import { listKeys } from "../../src/services/keys/list-keys";
import { revokeKey } from "../../src/services/keys/revoke-key";
import { CreateKeyInput } from "../../src/services/keys/shapes";
import { parseInput } from "../../src/domain/validation";
import { requireAdmin } from "../../src/services/people";
import { ById, input, procedure, router } from "../init";

/** The workspace's API keys: listed by anyone in it, created (shown once) and revoked by an admin, as with the CLI. */
export const keysRouter = router({
  list: procedure.query(({ ctx }) => listKeys(ctx.svc, { workspaceId: ctx.actor.workspaceId })),
  create: procedure.input(input<Omit<CreateKeyInput, "workspaceId">>()).mutation(({ ctx, input: data }) => {
    requireAdmin(ctx.actor, "creating API keys");
    // The workspace is the caller's: the input may name only what the key is.
    const own = parseInput(CreateKeyInput.omit({ workspaceId: true }).strict(), data ?? {});
    return createKey(ctx.svc, { ...own, workspaceId: ctx.actor.workspaceId }, ctx.actor);
  }),
  revoke: procedure.input(ById).mutation(({ ctx, input: { id } }) => {
    requireAdmin(ctx.actor, "revoking API keys");
    return revokeKey(ctx.svc, { keyId: id, workspaceId: ctx.actor.workspaceId, by: ctx.actor });
  }),
});
