/**
 * The service's own name, declared once. In an object store the first key
 * segment `.fps` is reserved for the local store's bookkeeping (temp files,
 * multipart parts, metadata, pins), so neither keys nor space paths may start
 * with it; names the service leaves among a customer's files start with it
 * too (`.fps-folder`, the write check's probe on a customer's server).
 */
export const RESERVED_NAME = ".fps";
