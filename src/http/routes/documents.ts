import { Elysia } from "elysia";
import type { ServiceContext } from "../../services/context";
import * as documents from "../../services/documents";
import { callPlugin, type HttpOptions } from "../call";
import { describe, type RouteDescription, type RouteErrors } from "../openapi";

const PROTECTED =
  " Inside a pipeline-backed folder (`inbound` when the connection has an inbound pipeline, `outbound` when it has an outbound one) this needs `force: true` and an admin key: 409 without force, 403 with force and a member key; nothing changes.";
const PATHS = " Paths are relative to the connection's space; `..`, a leading `/`, NUL or control characters and backslashes are a 400 naming the field.";

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
    .post("/documents/upload-url", ({ call, input }) => documents.createUploadUrl(svc, { ...call, input: input as never }), {
      detail: doc({
        summary: "Get an upload ticket",
        description:
          "Up to DOCUMENTS_SINGLE_UPLOAD_MAX_BYTES (64 MiB) `mode` is `single`: PUT the whole file to `url` with `headers`. " +
          "Above it `multipart`: PUT byte range [(n-1)·partSize, n·partSize) to `parts[n-1].url`, keep each reply's ETag, then POST /documents/upload-complete. " +
          "The object's path is `path`/`filename`; an existing object there is replaced when the upload completes. A file where a folder is (or the reverse) is a 409." +
          PROTECTED +
          PATHS,
        body: documents.UploadUrlInput,
        response: { one: documents.UploadTicket },
        errors: changing("a file would be where a folder is, or the reverse"),
      }),
    })
    .post("/documents/upload-complete", ({ call, input }) => documents.completeUpload(svc, { ...call, input: input as never }), {
      detail: doc({
        summary: "Complete a multipart upload",
        description:
          "Every part, ascending, with the ETag its PUT answered; all but the last at least 5 MiB. The object appears whole, at once. An unknown upload id, or one of another path or connection, is a 404." +
          PROTECTED,
        body: documents.CompleteUploadInput,
        response: { one: documents.DocumentObject },
        errors: changing("a folder is at the path now", "no such upload for this path and connection"),
      }),
    })
    .post("/documents/upload-abort", ({ call, input }) => documents.abortUpload(svc, { ...call, input: input as never }), {
      detail: doc({
        summary: "Abort a multipart upload",
        description: "Removes the parts uploaded so far; the part links stop working. Aborting twice is harmless.",
        body: documents.AbortUploadInput,
        response: { one: documents.AbortUploadResult },
        errors: { not_found: NO_CONNECTION },
      }),
    })
    .get("/documents", ({ call, query }) => documents.listDocuments(svc, { ...call, input: query as never }), {
      detail: doc({
        summary: "Browse a folder",
        description:
          "Folders and objects directly inside `path`, in key order, `limit` at a time; pass `nextCursor` back as `cursor`. The root always lists `inbound` and `outbound`. A folder that does not exist is a 404." +
          PATHS,
        query: documents.ListDocumentsInput,
        response: { one: documents.DocumentListing },
        errors: { not_found: `${NO_CONNECTION}, or no folder at \`path\`` },
      }),
    })
    .get("/documents/object", ({ call, query }) => documents.getDocument(svc, { ...call, input: query as never }), {
      detail: doc({
        summary: "An object's metadata",
        query: documents.DocumentPathInput,
        response: { one: documents.DocumentObject },
        errors: { not_found: `${NO_CONNECTION}, or no object at \`path\`` },
      }),
    })
    .get("/documents/download-url", ({ call, query }) => documents.getDownloadUrl(svc, { ...call, input: query as never }), {
      detail: doc({
        summary: "Link to download an object",
        description: "A presigned GET link, usable without the API key until `expiresIn` seconds have passed (FILE_LINK_TTL_SECONDS); served as an attachment named after the object.",
        query: documents.DocumentPathInput,
        response: { one: documents.FileLink },
        errors: { not_found: `${NO_CONNECTION}, or no object at \`path\`` },
      }),
    })
    .post("/documents/folders", ({ call, input }) => documents.createFolder(svc, { ...call, input: input as never }), {
      detail: doc({
        summary: "Create a folder",
        description: "Parents are made as needed; an existing folder answers `created: false`. A file at the path or at a parent is a 409." + PROTECTED + PATHS,
        body: documents.CreateFolderInput,
        response: { one: documents.DocumentFolder },
        errors: changing("a file is at the path or at a parent"),
      }),
    })
    .post("/documents/move", ({ call, input }) => documents.moveDocument(svc, { ...call, input: input as never }), {
      detail: doc({
        summary: "Move an object or a folder",
        description: "`to` is the new path itself and must not exist (409); a folder moves with everything in it and cannot move into itself (400)." + PROTECTED + PATHS,
        body: documents.MoveDocumentInput,
        response: { one: documents.MoveDocumentResult },
        errors: { ...changing("something exists at `to`", "nothing at `from`"), invalid_input: "a folder moved into itself" },
      }),
    })
    .post("/documents/rename", ({ call, input }) => documents.renameDocument(svc, { ...call, input: input as never }), {
      detail: doc({
        summary: "Rename an object or a folder",
        description: "A move within the same folder: `name` is the new last segment (no '/')." + PROTECTED,
        body: documents.RenameDocumentInput,
        response: { one: documents.MoveDocumentResult },
        errors: changing("something exists with the new `name`", "nothing at `path`"),
      }),
    })
    .delete("/documents/object", ({ call, query }) => documents.deleteDocument(svc, { ...call, input: query as never }), {
      detail: doc({
        summary: "Delete an object",
        description: "404 when there is no object at `path`; its folder stays." + PROTECTED,
        query: documents.DeleteDocumentInput,
        response: { one: documents.DeleteDocumentResult },
        errors: changing(null, "no object at `path`"),
      }),
    })
    .delete("/documents/folder", ({ call, query }) => documents.deleteFolder(svc, { ...call, input: query as never }), {
      detail: doc({
        summary: "Delete a folder and everything in it",
        description: "404 when there is no such folder." + PROTECTED,
        query: documents.DeleteDocumentInput,
        response: { one: documents.DeleteDocumentResult },
        errors: changing(null, "no folder at `path`"),
      }),
    })
    .post("/documents/bulk-delete", ({ call, input }) => documents.bulkDelete(svc, { ...call, input: input as never }), {
      detail: doc({
        summary: "Delete many objects and folders",
        description:
          "One result per path, in order; a missing or protected path fails on its own line and the others are still deleted. A malformed path refuses the whole request (400 naming `paths[i]`).",
        body: documents.BulkDeleteInput,
        response: { one: documents.BulkDeleteResult },
        errors: { not_found: NO_CONNECTION },
      }),
    });
}
