import * as documents from "../src/services/documents";
import { builder } from "./builder";
import { inputType, outputType } from "./from-zod";

/**
 * The documents API (a connection-scoped file manager): the same services,
 * inputs and results as REST's /documents routes, one input object each.
 */

builder.queryFields((t) => ({
  documents: t.field({
    nullable: true,
    type: outputType(documents.DocumentListing),
    description: "One page of a folder of a connection's space (folders and objects directly inside, in key order).",
    args: { input: t.arg({ type: inputType(documents.ListDocumentsInput), required: true }) },
    resolve: (_, args, { svc, actor }) => documents.listDocuments(svc, { actor, input: args.input }),
  }),
  document: t.field({
    nullable: true,
    type: outputType(documents.DocumentObject),
    description: "An object's metadata.",
    args: { input: t.arg({ type: inputType(documents.DocumentPathInput), required: true }) },
    resolve: (_, args, { svc, actor }) => documents.getDocument(svc, { actor, input: args.input }),
  }),
  documentDownloadUrl: t.field({
    nullable: true,
    type: outputType(documents.FileLink),
    description: "A presigned GET link to an object, usable without the key until it expires.",
    args: { input: t.arg({ type: inputType(documents.DocumentPathInput), required: true }) },
    resolve: (_, args, { svc, actor }) => documents.getDownloadUrl(svc, { actor, input: args.input }),
  }),
}));

builder.mutationFields((t) => ({
  documentUploadUrl: t.field({
    nullable: true,
    type: outputType(documents.UploadTicket),
    description: "An upload ticket: `single` (one presigned PUT) or `multipart` (one presigned PUT per part, then completeDocumentUpload).",
    args: { input: t.arg({ type: inputType(documents.UploadUrlInput), required: true }) },
    resolve: (_, args, { svc, actor }) => documents.createUploadUrl(svc, { actor, input: args.input }),
  }),
  completeDocumentUpload: t.field({
    nullable: true,
    type: outputType(documents.DocumentObject),
    args: { input: t.arg({ type: inputType(documents.CompleteUploadInput), required: true }) },
    resolve: (_, args, { svc, actor }) => documents.completeUpload(svc, { actor, input: args.input }),
  }),
  abortDocumentUpload: t.field({
    nullable: true,
    type: outputType(documents.AbortUploadResult),
    args: { input: t.arg({ type: inputType(documents.AbortUploadInput), required: true }) },
    resolve: (_, args, { svc, actor }) => documents.abortUpload(svc, { actor, input: args.input }),
  }),
  createDocumentFolder: t.field({
    nullable: true,
    type: outputType(documents.DocumentFolder),
    args: { input: t.arg({ type: inputType(documents.CreateFolderInput), required: true }) },
    resolve: (_, args, { svc, actor }) => documents.createFolder(svc, { actor, input: args.input }),
  }),
  moveDocument: t.field({
    nullable: true,
    type: outputType(documents.MoveDocumentResult),
    description: "Moves an object or a folder (with everything in it) to a new path that does not exist yet.",
    args: { input: t.arg({ type: inputType(documents.MoveDocumentInput), required: true }) },
    resolve: (_, args, { svc, actor }) => documents.moveDocument(svc, { actor, input: args.input }),
  }),
  renameDocument: t.field({
    nullable: true,
    type: outputType(documents.MoveDocumentResult),
    args: { input: t.arg({ type: inputType(documents.RenameDocumentInput), required: true }) },
    resolve: (_, args, { svc, actor }) => documents.renameDocument(svc, { actor, input: args.input }),
  }),
  deleteDocument: t.field({
    nullable: true,
    type: outputType(documents.DeleteDocumentResult),
    args: { input: t.arg({ type: inputType(documents.DeleteDocumentInput), required: true }) },
    resolve: (_, args, { svc, actor }) => documents.deleteDocument(svc, { actor, input: args.input }),
  }),
  deleteDocumentFolder: t.field({
    nullable: true,
    type: outputType(documents.DeleteDocumentResult),
    description: "Deletes a folder and everything in it.",
    args: { input: t.arg({ type: inputType(documents.DeleteDocumentInput), required: true }) },
    resolve: (_, args, { svc, actor }) => documents.deleteFolder(svc, { actor, input: args.input }),
  }),
  bulkDeleteDocuments: t.field({
    nullable: true,
    type: outputType(documents.BulkDeleteResult),
    description: "Deletes each listed object or folder; one result per path, in order.",
    args: { input: t.arg({ type: inputType(documents.BulkDeleteInput), required: true }) },
    resolve: (_, args, { svc, actor }) => documents.bulkDelete(svc, { actor, input: args.input }),
  }),
}));
