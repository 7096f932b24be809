import { requireAdmin } from "../../src/services/people";
import { getWorkspace } from "../../src/services/workspaces/get-workspace";
import { setDefaultVersion } from "../../src/services/workspaces/update-workspace";
import { SetDefaultVersionInput } from "../../src/services/workspaces/shapes";
import { parseInput } from "../../src/domain/validation";
import { VERSIONS } from "../../src/domain/versions";
import { input, procedure, router } from "../init";

/** The caller's workspace and its settings: the default API version (the contract's dashboard setting). */
export const workspaceRouter = router({
  get: procedure.query(async ({ ctx }) => ({ ...(await getWorkspace(ctx.svc, { workspaceId: ctx.actor.workspaceId })), versions: VERSIONS })),
  setDefaultVersion: procedure.input(input<{ version: string | null }>()).mutation(({ ctx, input: data }) => {
    requireAdmin(ctx.actor, "changing the default API version");
    const { version } = parseInput(SetDefaultVersionInput.omit({ workspaceId: true }).strict(), data);
    return setDefaultVersion(ctx.svc, { workspaceId: ctx.actor.workspaceId, version }, ctx.actor);
  }),
});
