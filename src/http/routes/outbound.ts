import { Elysia } from "elysia";
import { AppError } from "../../domain/errors";
import type { ServiceContext } from "../../services/context";
import * as outbound from "../../services/outbound";
import { isJsonContentType, readJsonBody } from "../../transport/body";
import { callPlugin, type HttpOptions } from "../call";
import { inputOf } from "../../transport/input";
import { digestOf, idempotencyOf, ownBodyReplay } from "../idempotency";
import { describe, type RouteDescription } from "../openapi";

export function outboundRoutes(svc: ServiceContext, http: HttpOptions) {
  const doc = (d: Omit<RouteDescription, "tags">) => describe({ ...d, tags: ["Outbound uploads"] });
  return new Elysia({ name: "routes:outbound" })
    .use(callPlugin(svc, http))
    .post("/outbound/uploads", ({ call, input }) => outbound.createOutboundUpload(svc, { ...call, input: inputOf(outbound.CreateOutboundUploadInput, input) }), {
      detail: doc({
        summary: "Start an outbound upload",
        body: outbound.CreateOutboundUploadInput,
        response: { one: outbound.OutboundUploadCreated },
        errors: {
          invalid_input: "the pipeline's direction is not `outbound`",
          not_found: "no connection named `connectionName` (or `clientName`), or no pipeline named `pipelineName`",
          conflict: "the pipeline is inactive",
        },
      }),
    })
    .get("/outbound/uploads/:uploadId", ({ call, params }) => outbound.getOutboundUpload(svc, { ...call, uploadId: params.uploadId }), {
      detail: doc({
        summary: "Get an outbound upload",
        response: { one: outbound.OutboundUpload },
      }),
    })
    .put(
      "/outbound/uploads/:uploadId/parts/:partNumber",
      async ({ call, params, request, set }) => {
        const idem = idempotencyOf(request);
        const read = async () => {
          const rows = await readPartBody(request, svc.settings.outboundMaxPartBytes);
          if (idem) idem.fingerprint = digestOf(rows, `${idem.method} ${idem.path}\n`);
          return rows;
        };
        if (idem?.replay) {
          await read();
          const answer = ownBodyReplay(idem, idem.fingerprint as string);
          set.status = answer.status;
          set.headers["idempotent-replayed"] = "true";
          return answer.body;
        }
        return outbound.putOutboundPart(svc, { ...call, uploadId: params.uploadId, partNumber: params.partNumber, rows: read });
      },
      {
        // A part has its own size limit (OUTBOUND_MAX_PART_BYTES), read only once the session and part number are accepted.
        ownBody: true,
        idempotencyKey: true,
        parse: "none",
        detail: doc({
          summary: "Send one part of an outbound upload",
          body: outbound.OutboundPartRows,
          response: { one: outbound.OutboundPartReceived },
          errors: {
            invalid_input: "a part number outside 1..totalParts",
            conflict: "the session is no longer `initiated` (completed, failed or expired)",
            payload_too_large: "the part is over OUTBOUND_MAX_PART_BYTES; send the rows in more parts",
          },
        }),
      },
    )
    .post(
      "/outbound/uploads/:uploadId/complete",
      ({ call, params, input }) => outbound.completeOutboundUpload(svc, { ...call, uploadId: params.uploadId, input: inputOf(outbound.CompleteOutboundUploadInput, input) }),
      {
        detail: doc({
          summary: "Complete an outbound upload",
          body: outbound.CompleteOutboundUploadInput,
          response: { one: outbound.OutboundUploadCompleted },
          errors: {
            invalid_input: "`parts` does not list every part 1..totalParts once, or one was not received",
            conflict: "the session failed or expired, or a part is no longer stored",
          },
        }),
      },
    );
}

/** A part's JSON body under its own limit; the rules (content type, malformed JSON) are those of every JSON body. */
async function readPartBody(request: Request, maxBytes: number): Promise<unknown> {
  const contentType = request.headers.get("content-type");
  if (!isJsonContentType(contentType)) {
    throw new AppError("unsupported_media_type", `content-type: '${contentType}' is not accepted here; send application/json`);
  }
  try {
    return await readJsonBody(request, maxBytes);
  } catch (e) {
    if (e instanceof AppError && e.code === "payload_too_large") {
      throw new AppError("payload_too_large", `body: larger than the ${maxBytes}-byte limit of one part (OUTBOUND_MAX_PART_BYTES); send the rows in more parts`);
    }
    throw e;
  }
}
