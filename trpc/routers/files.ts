import { z } from "zod";
import * as files from "../../src/services/files";
import { ById, input, procedure, router } from "../init";

export const filesRouter = router({
  /** Rows of the listed runs' processed files; the same input and result as POST /files/search. */
  search: procedure
    .input(input<files.SearchFilesInput>())
    .query(({ ctx, input: data }) => files.searchFiles(ctx.svc, { actor: ctx.actor, input: data })),
  /** A presigned GET link to a run's original, processed or rejects file. */
  link: procedure
    // `which` is checked by the service, with the message REST gives.
    .input(ById.extend({ which: z.custom<files.RunFileKind>() }))
    .query(({ ctx, input: { id, which } }) => files.getRunFileLink(ctx.svc, { actor: ctx.actor, runId: id, which })),
});
