import * as documents from "../../src/services/documents";
import { input, procedure, router } from "../init";

/** The documents API; the same inputs and results as the REST /documents routes. */
export const documentsRouter = router({
  uploadUrl: procedure
    .input(input<documents.UploadUrlInput>())
    .mutation(({ ctx, input: data }) => documents.createUploadUrl(ctx.svc, { actor: ctx.actor, input: data })),
  completeUpload: procedure
    .input(input<documents.CompleteUploadInput>())
    .mutation(({ ctx, input: data }) => documents.completeUpload(ctx.svc, { actor: ctx.actor, input: data })),
  abortUpload: procedure
    .input(input<documents.AbortUploadInput>())
    .mutation(({ ctx, input: data }) => documents.abortUpload(ctx.svc, { actor: ctx.actor, input: data })),
  list: procedure.input(input<documents.ListDocumentsInput>()).query(({ ctx, input: data }) => documents.listDocuments(ctx.svc, { actor: ctx.actor, input: data })),
  get: procedure.input(input<documents.DocumentPathInput>()).query(({ ctx, input: data }) => documents.getDocument(ctx.svc, { actor: ctx.actor, input: data })),
  downloadUrl: procedure
    .input(input<documents.DocumentPathInput>())
    .query(({ ctx, input: data }) => documents.getDownloadUrl(ctx.svc, { actor: ctx.actor, input: data })),
  createFolder: procedure
    .input(input<documents.CreateFolderInput>())
    .mutation(({ ctx, input: data }) => documents.createFolder(ctx.svc, { actor: ctx.actor, input: data })),
  move: procedure.input(input<documents.MoveDocumentInput>()).mutation(({ ctx, input: data }) => documents.moveDocument(ctx.svc, { actor: ctx.actor, input: data })),
  rename: procedure
    .input(input<documents.RenameDocumentInput>())
    .mutation(({ ctx, input: data }) => documents.renameDocument(ctx.svc, { actor: ctx.actor, input: data })),
  delete: procedure
    .input(input<documents.DeleteDocumentInput>())
    .mutation(({ ctx, input: data }) => documents.deleteDocument(ctx.svc, { actor: ctx.actor, input: data })),
  deleteFolder: procedure
    .input(input<documents.DeleteDocumentInput>())
    .mutation(({ ctx, input: data }) => documents.deleteFolder(ctx.svc, { actor: ctx.actor, input: data })),
  bulkDelete: procedure
    .input(input<documents.BulkDeleteInput>())
    .mutation(({ ctx, input: data }) => documents.bulkDelete(ctx.svc, { actor: ctx.actor, input: data })),
});
