import { z } from "zod";
import { FileLink } from "../files/shapes";
import { Id, QueryBool } from "../shared/shapes";

/**
 * One shape per input and output of the documents API, used by REST (and
 * its OpenAPI description), GraphQL and tRPC alike. Paths are checked for
 * type and length here; their meaning (normalisation, confinement to the
 * connection's space) is checked by the services with `normalizeSpacePath`,
 * so every transport refuses the same tricks with the same message.
 */

export const MiB = 1024 * 1024;
/** DESIGN.md: `single` up to 64 MiB (DOCUMENTS_SINGLE_UPLOAD_MAX_BYTES changes it). */
export const DEFAULT_SINGLE_UPLOAD_MAX_BYTES = 64 * MiB;
/** DESIGN.md: parts of at least 8 MiB; S3 allows 5 MiB to 5 GiB per part (all but the last) and 10,000 parts. */
export const MIN_TICKET_PART_BYTES = 8 * MiB;
export const MAX_TICKET_PARTS = 10_000;
export const MAX_PART_BYTES = 5 * 1024 * MiB;
/** S3's largest object. */
export const MAX_OBJECT_BYTES = 5 * 1024 * 1024 * MiB;
export const DEFAULT_LIST_LIMIT = 100;
export const MAX_LIST_LIMIT = 1000;
export const MAX_BULK_PATHS = 1000;

const mustBeString = (i: { input: unknown }) => (i.input === undefined ? "is required" : "must be a string");
const PathText = z.string({ error: mustBeString }).max(2000, "must be at most 2000 characters");
const ConnectionId = Id.meta({ description: "The connection whose space this is (of the caller's workspace)." });
const Force = z
  .boolean({ error: "must be true or false" })
  .default(false)
  .meta({ description: "Needed, with an admin key, to write into, move or delete a pipeline-backed folder (`inbound`, `outbound`)." });
const WholeNumber = z.number({ error: (i) => (i.input === undefined ? "is required" : "must be a whole number") }).int("must be a whole number");

export const UploadUrlInput = z
  .strictObject({
    connectionId: ConnectionId,
    filename: z
      .string({ error: mustBeString })
      .min(1, "must not be empty")
      .max(255, "must be at most 255 characters")
      .meta({ description: "The object's name: one path segment, no '/'." }),
    size: WholeNumber.min(0, "must be at least 0").meta({ description: "Bytes the client will upload; picks `single` or `multipart`." }),
    path: PathText.default("").meta({ description: "Folder inside the connection's space (`inbound`, `reports/2026`); empty: the space root." }),
    contentType: z
      .string({ error: mustBeString })
      .max(255, "must be at most 255 characters")
      .regex(/^[\w.+-]+\/[\w.+-]+(\s*;\s*[\w.+-]+=("[^"\\\r\n]*"|[\w.+-]+))*$/, "must be a media type such as text/csv")
      .optional()
      .meta({ description: "Stored with the object; a `single` upload must send it (see `headers`). Default: from the file name's extension." }),
    force: Force,
  })
  .meta({ id: "UploadUrlInput" });
export type UploadUrlInput = z.input<typeof UploadUrlInput>;

export const UPLOAD_MODES = ["single", "multipart"] as const;

export const UploadPartLink = z
  .object({ partNumber: z.number().int(), url: z.string().meta({ description: "PUT this part's bytes here; the reply's ETag header is needed for completion." }) })
  .meta({ id: "UploadPartLink" });

export const UploadTicket = z
  .object({
    mode: z
      .enum(UPLOAD_MODES)
      .meta({ id: "UploadMode", description: "`single`: one PUT of the whole file to `url`, then upload-complete without uploadId (needed in an inbound folder for runs to start). `multipart`: one PUT per part, then upload-complete." }),
    path: z.string().meta({ description: "The object's path in the space; pass it to upload-complete and upload-abort." }),
    url: z.string().optional().meta({ description: "`single` only: PUT the whole file here, with `headers`." }),
    headers: z.record(z.string(), z.string()).meta({ description: "Headers to send with the PUT (the content type bound into the link); empty for parts." }),
    uploadId: z.string().optional().meta({ description: "`multipart` only." }),
    parts: z.array(UploadPartLink).optional().meta({ description: "`multipart` only: one link per part, in order." }),
    partSize: z
      .number()
      .int()
      .optional()
      .meta({ description: "`multipart` only: bytes per part; every part but the last is exactly this long (byte i belongs to part floor(i / partSize) + 1)." }),
    expiresIn: z.number().int().meta({ description: "Seconds the links stay valid." }),
  })
  .meta({ id: "UploadTicket" });
export type UploadTicket = z.output<typeof UploadTicket>;

const UploadId = z
  .string({ error: mustBeString })
  .min(1, "must not be empty")
  .max(1024, "must be at most 1024 characters")
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are exactly what is refused
  .regex(/^[^\u0000-\u001f\u007f]*$/, "must not contain control characters");

export const CompleteUploadInput = z
  .strictObject({
    connectionId: ConnectionId,
    path: PathText.meta({ description: "The ticket's `path`." }),
    uploadId: UploadId.optional().meta({ description: "The multipart ticket's `uploadId`; leave out (with `parts`) to confirm a `single` upload already PUT." }),
    parts: z
      .array(
        z.strictObject({
          partNumber: WholeNumber.min(1, "must be at least 1").max(MAX_TICKET_PARTS, `must be at most ${MAX_TICKET_PARTS}`),
          etag: z.string({ error: mustBeString }).min(1, "must not be empty").max(200, "must be at most 200 characters"),
        }),
        { error: (i) => (i.input === undefined ? "is required" : "must be an array of {partNumber, etag}") },
      )
      .min(1, "must list at least one part")
      .max(MAX_TICKET_PARTS, `must list at most ${MAX_TICKET_PARTS} parts`)
      .optional()
      .meta({ description: "Multipart: every part, in ascending partNumber order, with the ETag its PUT answered." }),
    force: Force,
  })
  .superRefine((c, ctx) => {
    if (c.uploadId !== undefined && c.parts === undefined) ctx.addIssue({ code: "custom", path: ["parts"], message: "is required with uploadId" });
    if (c.uploadId === undefined && c.parts !== undefined) ctx.addIssue({ code: "custom", path: ["uploadId"], message: "is required with parts" });
  })
  .meta({ id: "CompleteUploadInput" });
export type CompleteUploadInput = z.input<typeof CompleteUploadInput>;

export const AbortUploadInput = z
  .strictObject({ connectionId: ConnectionId, path: PathText.meta({ description: "The ticket's `path`." }), uploadId: UploadId })
  .meta({ id: "AbortUploadInput" });
export type AbortUploadInput = z.input<typeof AbortUploadInput>;

export const AbortUploadResult = z
  .object({ aborted: z.boolean().meta({ description: "true: no upload with this id remains (its parts are gone); false: the id names no upload." }) })
  .meta({ id: "AbortUploadResult" });

/** Query of GET routes (text) and input of GraphQL/tRPC (typed): both parse here. */
export const ListDocumentsInput = z
  .object({
    connectionId: ConnectionId,
    path: PathText.default("").meta({ description: "The folder to list; empty: the space root." }),
    cursor: z
      .string({ error: mustBeString })
      .max(2000, "must be at most 2000 characters")
      // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are exactly what is refused
      .regex(/^[^\u0000-\u001f\u007f]*$/, "is not a cursor of this folder")
      .optional()
      .meta({ description: "`nextCursor` of the previous page." }),
    limit: z.coerce
      .number({ error: "must be a whole number" })
      .int("must be a whole number")
      .min(1, "must be at least 1")
      .max(MAX_LIST_LIMIT, `must be at most ${MAX_LIST_LIMIT}`)
      .default(DEFAULT_LIST_LIMIT),
  })
  .meta({ id: "ListDocumentsInput" });
export type ListDocumentsInput = z.input<typeof ListDocumentsInput>;

export const DocumentPathInput = z
  .object({ connectionId: ConnectionId, path: PathText.meta({ description: "An object's path in the space (`reports/2026/q1.csv`)." }) })
  .meta({ id: "DocumentPathInput" });
export type DocumentPathInput = z.input<typeof DocumentPathInput>;

export const DeleteDocumentInput = z
  .object({
    connectionId: ConnectionId,
    path: PathText,
    force: QueryBool.default(false).meta({ description: "Needed, with an admin key, inside a pipeline-backed folder." }),
  })
  .meta({ id: "DeleteDocumentInput" });
export type DeleteDocumentInput = z.input<typeof DeleteDocumentInput>;

export const CreateFolderInput = z
  .strictObject({ connectionId: ConnectionId, path: PathText.meta({ description: "The new folder; its parents are made as needed." }), force: Force })
  .meta({ id: "CreateFolderInput" });
export type CreateFolderInput = z.input<typeof CreateFolderInput>;

export const MoveDocumentInput = z
  .strictObject({
    connectionId: ConnectionId,
    from: PathText.meta({ description: "An object or a folder." }),
    to: PathText.meta({ description: "Its new path (not the folder to put it in); must not exist yet." }),
    force: Force,
  })
  .meta({ id: "MoveDocumentInput" });
export type MoveDocumentInput = z.input<typeof MoveDocumentInput>;

export const RenameDocumentInput = z
  .strictObject({
    connectionId: ConnectionId,
    path: PathText.meta({ description: "An object or a folder." }),
    name: z
      .string({ error: mustBeString })
      .min(1, "must not be empty")
      .max(255, "must be at most 255 characters")
      .meta({ description: "The new last segment; the object or folder stays in its folder." }),
    force: Force,
  })
  .meta({ id: "RenameDocumentInput" });
export type RenameDocumentInput = z.input<typeof RenameDocumentInput>;

export const BulkDeleteInput = z
  .strictObject({
    connectionId: ConnectionId,
    paths: z
      .array(PathText, { error: (i) => (i.input === undefined ? "is required" : "must be an array of paths") })
      .min(1, "must list at least one path")
      .max(MAX_BULK_PATHS, `must list at most ${MAX_BULK_PATHS} paths`)
      .meta({ description: "Objects and folders (folders with everything in them)." }),
    force: Force,
  })
  .meta({ id: "BulkDeleteInput" });
export type BulkDeleteInput = z.input<typeof BulkDeleteInput>;

export const DOCUMENT_KINDS = ["object", "folder"] as const;
export type DocumentKind = (typeof DOCUMENT_KINDS)[number];
const Kind = z.enum(DOCUMENT_KINDS).meta({ id: "DocumentKind" });

const Protected = z.boolean().meta({ description: "Inside a pipeline-backed folder: changing it needs `force` and an admin key." });

export const DocumentObject = z
  .object({
    path: z.string(),
    name: z.string(),
    size: z.number().int(),
    etag: z.string(),
    contentType: z.string(),
    updatedAt: z.date(),
    protected: Protected,
  })
  .meta({ id: "DocumentObject" });
export type DocumentObject = z.output<typeof DocumentObject>;

export const DocumentEntry = z
  .object({
    kind: Kind,
    path: z.string(),
    name: z.string(),
    size: z.number().int().optional().meta({ description: "Objects only." }),
    etag: z.string().optional().meta({ description: "Objects only." }),
    contentType: z.string().optional().meta({ description: "Objects only; from the extension on S3 listings (the object's metadata has the stored one)." }),
    updatedAt: z.date().optional().meta({ description: "Objects only." }),
    protected: Protected,
  })
  .meta({ id: "DocumentEntry" });
export type DocumentEntry = z.output<typeof DocumentEntry>;

export const DocumentListing = z
  .object({
    connectionId: z.string(),
    path: z.string().meta({ description: "The folder listed (normalised); empty for the root." }),
    entries: z.array(DocumentEntry).meta({ description: "Folders and objects directly inside, in key order (UTF-8 bytes)." }),
    // Described inside the nullable: a described nullable string prints as a JSON type array, which GraphQL types as JSON.
    nextCursor: z.string().meta({ description: "Pass as `cursor` for the next page; null on the last page." }).nullable(),
  })
  .meta({ id: "DocumentListing" });
export type DocumentListing = z.output<typeof DocumentListing>;

export const DocumentFolder = z
  .object({ path: z.string(), created: z.boolean().meta({ description: "false: it existed already (nothing changed)." }), protected: Protected })
  .meta({ id: "DocumentFolder" });
export type DocumentFolder = z.output<typeof DocumentFolder>;

export const MoveDocumentResult = z
  .object({ kind: Kind, from: z.string(), to: z.string(), objects: z.number().int().meta({ description: "Objects moved (a folder's, counted with its marker)." }) })
  .meta({ id: "MoveDocumentResult" });
export type MoveDocumentResult = z.output<typeof MoveDocumentResult>;

export const DeleteDocumentResult = z
  .object({ kind: Kind, path: z.string(), objects: z.number().int().meta({ description: "Objects removed." }) })
  .meta({ id: "DeleteDocumentResult" });
export type DeleteDocumentResult = z.output<typeof DeleteDocumentResult>;

export const BulkDeleteItem = z
  .object({
    path: z.string().meta({ description: "As sent (normalised)." }),
    deleted: z.boolean(),
    kind: Kind.optional().meta({ description: "What was deleted." }),
    objects: z.number().int().meta({ description: "Objects removed for this path." }),
    error: z
      .object({ error: z.string(), message: z.string() })
      .optional()
      .meta({
        description:
          "Why this path was not deleted, as the error code a single delete would answer: not_found, conflict (pipeline-backed, no force), forbidden (force without an admin key).",
      }),
  })
  .meta({ id: "BulkDeleteItem" });
export type BulkDeleteItem = z.output<typeof BulkDeleteItem>;

export const BulkDeleteResult = z
  .object({ results: z.array(BulkDeleteItem).meta({ description: "One per path, in the order sent." }), deleted: z.number().int(), failed: z.number().int() })
  .meta({ id: "BulkDeleteResult" });
export type BulkDeleteResult = z.output<typeof BulkDeleteResult>;

export { FileLink };
