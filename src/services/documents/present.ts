import type { ObjectInfo } from "../../adapters/storage/port";
import type { DocumentObject } from "./shapes";
import { isProtected, nameOf, type Space } from "./space";

export function presentObject(s: Space, path: string, info: ObjectInfo): DocumentObject {
  return {
    path,
    name: nameOf(path),
    size: info.size,
    etag: info.etag,
    contentType: info.contentType,
    updatedAt: info.updatedAt,
    protected: isProtected(s, path),
  };
}
