import { Elysia } from "elysia";
import type { ServiceContext } from "../../services/context";
import * as documents from "../../services/documents";
import { callPlugin, type HttpOptions } from "../call";
import { inputOf } from "../../transport/input";
import { describe, type RouteDescription, type RouteErrors } from "../openapi";

const NO_CONNECTION = "no connection `connectionId`";
const GUARDED = "in a pipeline-backed folder with `force: true`, and the key is not an admin key";
/** The errors of a change inside a connection's space: `conflict` names what else the route refuses. */
const changing = (conflict: string | null, notFound?: string): RouteErrors => ({
  not_found: notFound ? `${NO_CONNECTION}, or ${notFound}` : NO_CONNECTION,
  conflict: `${conflict ? `${conflict}, or ` : ""}the path is in a pipeline-backed folder and \`force\` is not true`,
  forbidden: GUARDED,
});

/** The documents API: a connection-scoped file manager over its space (docs/decisions/documents.md). */
export function documentRoutes(svc: ServiceContext, http: HttpOptions) {
  const doc = (d: Omit<RouteDescription, "tags">) => describe({ ...d, tags: ["Documents"] });
  return new Elysia({ name: "routes:documents" })
    .use(callPlugin(svc, http))
    .post("/documents/upload-url", ({ call, input }) => documents.createUploadUrl(svc, { ...call, input: inputOf(documents.UploadUrlInput, input) }), {
      detail: doc({
        summary: "Get an upload ticket",
        body: documents.UploadUrlInput,
        response: { one: documents.UploadTicket },
        errors: changing("a file would be where a folder is, or the reverse"),
      }),
    })
    .post("/documents/upload-complete", ({ call, input }) => documents.completeUpload(svc, { ...call, input: inputOf(documents.CompleteUploadInput, input) }), {
      detail: doc({
        summary: "Complete a multipart upload",
        body: documents.CompleteUploadInput,
        response: { one: documents.DocumentObject },
        errors: changing("a folder is at the path now", "no such upload for this path and connection"),
      }),
    })
    .post("/documents/upload-abort", ({ call, input }) => documents.abortUpload(svc, { ...call, input: inputOf(documents.AbortUploadInput, input) }), {
      detail: doc({
        summary: "Abort a multipart upload",
        body: documents.AbortUploadInput,
        response: { one: documents.AbortUploadResult },
        errors: { not_found: NO_CONNECTION },
      }),
    })
    .get("/documents", ({ call, query }) => documents.listDocuments(svc, { ...call, input: inputOf(documents.ListDocumentsInput, query) }), {
      detail: doc({
        summary: "Browse a folder",
        query: documents.ListDocumentsInput,
        response: { one: documents.DocumentListing },
        errors: { not_found: `${NO_CONNECTION}, or no folder at \`path\`` },
      }),
    })
    .get("/documents/object", ({ call, query }) => documents.getDocument(svc, { ...call, input: inputOf(documents.DocumentPathInput, query) }), {
      detail: doc({
        summary: "An object's metadata",
        query: documents.DocumentPathInput,
        response: { one: documents.DocumentObject },
        errors: { not_found: `${NO_CONNECTION}, or no object at \`path\`` },
      }),
    })
    .get("/documents/download-url", ({ call, query }) => documents.getDownloadUrl(svc, { ...call, input: inputOf(documents.DocumentPathInput, query) }), {
      detail: doc({
        summary: "Link to download an object",
        query: documents.DocumentPathInput,
        response: { one: documents.FileLink },
        errors: { not_found: `${NO_CONNECTION}, or no object at \`path\`` },
      }),
    })
    .post("/documents/folders", ({ call, input }) => documents.createFolder(svc, { ...call, input: inputOf(documents.CreateFolderInput, input) }), {
      detail: doc({
        summary: "Create a folder",
        body: documents.CreateFolderInput,
        response: { one: documents.DocumentFolder },
        errors: changing("a file is at the path or at a parent"),
      }),
    })
    .post("/documents/move", ({ call, input }) => documents.moveDocument(svc, { ...call, input: inputOf(documents.MoveDocumentInput, input) }), {
      detail: doc({
        summary: "Move an object or a folder",
        body: documents.MoveDocumentInput,
        response: { one: documents.MoveDocumentResult },
        errors: { ...changing("something exists at `to`", "nothing at `from`"), invalid_input: "a folder moved into itself" },
      }),
    })
    .post("/documents/rename", ({ call, input }) => documents.renameDocument(svc, { ...call, input: inputOf(documents.RenameDocumentInput, input) }), {
      detail: doc({
        summary: "Rename an object or a folder",
        body: documents.RenameDocumentInput,
        response: { one: documents.MoveDocumentResult },
        errors: changing("something exists with the new `name`", "nothing at `path`"),
      }),
    })
    .delete("/documents/object", ({ call, query }) => documents.deleteDocument(svc, { ...call, input: inputOf(documents.DeleteDocumentInput, query) }), {
      detail: doc({
        summary: "Delete an object",
        query: documents.DeleteDocumentInput,
        response: { one: documents.DeleteDocumentResult },
        errors: changing(null, "no object at `path`"),
      }),
    })
    .delete("/documents/folder", ({ call, query }) => documents.deleteFolder(svc, { ...call, input: inputOf(documents.DeleteDocumentInput, query) }), {
      detail: doc({
        summary: "Delete a folder and everything in it",
        query: documents.DeleteDocumentInput,
        response: { one: documents.DeleteDocumentResult },
        errors: changing(null, "no folder at `path`"),
      }),
    })
    .post("/documents/bulk-delete", ({ call, input }) => documents.bulkDelete(svc, { ...call, input: inputOf(documents.BulkDeleteInput, input) }), {
      detail: doc({
        summary: "Delete many objects and folders",
        body: documents.BulkDeleteInput,
        response: { one: documents.BulkDeleteResult },
        errors: { not_found: NO_CONNECTION },
      }),
    });
}
