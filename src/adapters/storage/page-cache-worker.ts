/** The dropper thread of src/adapters/storage/page-cache.ts: page-cache drops off the service's thread. */
import { dropWritten } from "./page-cache";

declare const self: Worker;

self.onmessage = (event: MessageEvent<{ id: number; fd: number; offset: number; length: number }>) => {
  const { id, fd, offset, length } = event.data;
  try {
    dropWritten(fd, offset, length);
  } finally {
    self.postMessage(id);
  }
};
