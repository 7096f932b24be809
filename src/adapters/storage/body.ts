import type { Body } from "./port";

const encoder = new TextEncoder();

/** Any accepted body as a sequence of byte chunks, without collecting it. */
export async function* chunksOf(body: Body): AsyncGenerator<Uint8Array> {
  if (typeof body === "string") {
    yield encoder.encode(body);
    return;
  }
  if (body instanceof Uint8Array) {
    yield body;
    return;
  }
  for await (const chunk of body as AsyncIterable<Uint8Array | string>) {
    yield typeof chunk === "string" ? encoder.encode(chunk) : chunk;
  }
}

/**
 * Passes the body through, failing once more than `limit` bytes went by, so a
 * client cannot fill the disk by sending more than it announced.
 */
export async function* limited(body: AsyncIterable<Uint8Array>, limit: number, onExceeded: () => Error): AsyncGenerator<Uint8Array> {
  let seen = 0;
  for await (const chunk of body) {
    seen += chunk.byteLength;
    if (seen > limit) throw onExceeded();
    yield chunk;
  }
}
