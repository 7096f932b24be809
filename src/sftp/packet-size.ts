import { createRequire } from "node:module";

/**
 * ssh2 advertises a maximum channel packet of 32 KiB for the session
 * channels clients open. An SFTP WRITE carrying OpenSSH's 32 KiB of data is
 * 29 bytes longer, so every one arrived split over two channel messages and
 * ssh2 had to allocate a buffer and copy the two halves together: a second
 * 32 KiB of garbage per request on top of the decrypted packet. Advertising
 * 34,000 bytes (as ssh2's own SFTP layer assumes for peers it does not know;
 * ssh2's transport accepts packets up to 35,000) lets a whole WRITE arrive in
 * one message, which ssh2 hands on without copying. On the 2-core machine a
 * 512 MiB put went from 14.6-21.7 s to 11.3-13.5 s with fewer collections.
 *
 * ssh2 1.17.0 passes the size to `Protocol#channelOpenConfirm`, only when
 * the peer opened the channel (a server's sessions; a client's forwarded
 * channels, which the service does not use). The wrapper raises it there;
 * if a later ssh2 has no such method, nothing changes.
 */
const MAX_PACKET = 34_000;

const Protocol = createRequire(import.meta.url)("ssh2/lib/protocol/Protocol.js") as {
  prototype: { channelOpenConfirm?: (remote: number, local: number, window: number, maxPacket: number) => unknown; __fpsPacketSize?: true };
};
const proto = Protocol.prototype;
const original = proto.channelOpenConfirm;
if (typeof original === "function" && !proto.__fpsPacketSize) {
  proto.__fpsPacketSize = true;
  proto.channelOpenConfirm = function (this: unknown, remote: number, local: number, window: number, maxPacket: number) {
    return original.call(this, remote, local, window, Math.max(maxPacket, MAX_PACKET));
  };
}
