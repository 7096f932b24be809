import { trpc } from "../trpc";

/**
 * A file into a connection's folder through presigned links: a ticket, then
 * one PUT (single) or one PUT per part (multipart, parts in turn), each by
 * XHR for its upload progress, then completion; `single` uploads are
 * confirmed too, which is when a file in the inbound folder arrives and
 * starts its pipelines' runs. Aborting stops the PUT and abandons a
 * multipart upload's parts.
 */
export interface UploadJob {
  promise: Promise<void>;
  abort: () => void;
}

export function uploadDocument(opts: { connectionId: string; folder: string; file: File; force: boolean; onProgress: (fraction: number) => void }): UploadJob {
  let current: XMLHttpRequest | null = null;
  let aborted = false;
  let multipart: { path: string; uploadId: string } | null = null;
  const { connectionId, file, force } = opts;

  const put = (url: string, body: Blob, headers: Record<string, string>, onLoaded: (n: number) => void) =>
    new Promise<string>((resolve, reject) => {
      if (aborted) return reject(new Error("aborted"));
      const xhr = new XMLHttpRequest();
      current = xhr;
      xhr.open("PUT", url);
      for (const [k, v] of Object.entries(headers)) xhr.setRequestHeader(k, v);
      xhr.upload.onprogress = (e) => onLoaded(e.loaded);
      xhr.onload = () => (xhr.status === 200 ? resolve(xhr.getResponseHeader("etag") ?? "") : reject(new Error(`the upload was refused (${xhr.status}): ${xhr.responseText.slice(0, 200)}`)));
      xhr.onerror = () => reject(new Error("the upload was interrupted"));
      xhr.onabort = () => reject(new Error("aborted"));
      xhr.send(body);
    });

  const run = async () => {
    const ticket = await trpc.documents.uploadUrl.mutate({
      connectionId,
      path: opts.folder,
      filename: file.name,
      size: file.size,
      ...(file.type ? { contentType: file.type } : {}),
      force,
    });
    if (ticket.mode === "single") {
      await put(ticket.url!, file, ticket.headers, (n) => opts.onProgress(file.size ? n / file.size : 1));
      await trpc.documents.completeUpload.mutate({ connectionId, path: ticket.path, force });
    } else {
      multipart = { path: ticket.path, uploadId: ticket.uploadId! };
      const size = ticket.partSize!;
      const parts: { partNumber: number; etag: string }[] = [];
      for (const part of ticket.parts!) {
        const start = (part.partNumber - 1) * size;
        const etag = await put(part.url, file.slice(start, Math.min(file.size, start + size)), ticket.headers, (n) => opts.onProgress((start + n) / file.size));
        parts.push({ partNumber: part.partNumber, etag });
      }
      await trpc.documents.completeUpload.mutate({ connectionId, path: ticket.path, uploadId: ticket.uploadId!, parts, force });
    }
    opts.onProgress(1);
  };

  const promise = run().catch(async (e: Error) => {
    if (aborted && multipart) await trpc.documents.abortUpload.mutate({ connectionId, ...multipart }).catch(() => {});
    throw aborted ? new Error("aborted") : e;
  });
  return {
    promise,
    abort: () => {
      aborted = true;
      (current as XMLHttpRequest | null)?.abort();
    },
  };
}
