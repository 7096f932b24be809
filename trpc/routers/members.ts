import * as people from "../../src/services/people";
import { ById, input, procedure, router } from "../init";

/** The workspace's people and invitations; changing them takes the admin role. */
export const membersRouter = router({
  list: procedure.query(({ ctx }) => people.listMembers(ctx.svc, { actor: ctx.actor })),
  invite: procedure.input(input<people.InviteInput>()).mutation(({ ctx, input: data }) => people.invite(ctx.svc, { actor: ctx.actor }, data)),
  remove: procedure.input(input<{ userId: string }>()).mutation(({ ctx, input: data }) => people.removeMember(ctx.svc, { actor: ctx.actor }, data)),
  changeRole: procedure.input(input<people.ChangeRoleInput>()).mutation(({ ctx, input: data }) => people.changeRole(ctx.svc, { actor: ctx.actor }, data)),
  revokeInvite: procedure.input(ById).mutation(({ ctx, input: { id } }) => people.revokeInvite(ctx.svc, { actor: ctx.actor }, { id })),
});
