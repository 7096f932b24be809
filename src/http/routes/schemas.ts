import { Elysia } from "elysia";
import type { ServiceContext } from "../../services/context";
import * as schemas from "../../services/schemas";
import { DeleteResult } from "../../services/shared/shapes";
import { callPlugin, type HttpOptions } from "../call";
import { inputOf } from "../../transport/input";
import { describe, type RouteDescription } from "../openapi";
import { jsonField, readSampleForm } from "../sample-form";
import { pagedList } from "./lists";
import { formRef, InferSchemaForm } from "./sample-doc";

export function schemaRoutes(svc: ServiceContext, http: HttpOptions) {
  const doc = (d: Omit<RouteDescription, "tags">) => describe({ ...d, tags: ["Schemas"] });
  return new Elysia({ name: "routes:schemas" })
    .use(callPlugin(svc, http))
    .get("/schemas", async ({ call, query }) => pagedList(await schemas.listSchemas(svc, { ...call, query }), schemas.presentSchema), {
      detail: doc({ summary: "List schemas", query: schemas.ListSchemasQuery, response: { pageOf: schemas.Schema } }),
    })
    .post("/schemas", async ({ call, input }) => schemas.presentSchema(await schemas.createSchema(svc, { ...call, input: inputOf(schemas.CreateSchemaInput, input) })), {
      detail: doc({
        summary: "Create a schema",
        body: schemas.CreateSchemaInput,
        response: { one: schemas.Schema },
        errors: { conflict: "a schema with this `name` exists" },
      }),
    })
    .post(
      "/schemas/infer",
      async ({ call, request }) => {
        const { sample, fields } = await readSampleForm(request, svc.settings.preview.maxBytes, svc.settings.maxUploadBytes);
        return schemas.inferSchema(svc, { ...call, sample, input: { options: jsonField(fields, "options") }, signal: request.signal });
      },
      {
        ownBody: true,
        parse: "none",
        detail: {
          ...doc({
            summary: "Draft a schema from a sample file",
            response: { one: schemas.InferredSchema },
            errors: { payload_too_large: "the whole request is over MAX_UPLOAD_BYTES (the sample itself is read up to PREVIEW_MAX_BYTES)" },
          }),
          requestBody: { required: true, content: { "multipart/form-data": { schema: formRef(InferSchemaForm) } } },
        },
      },
    )
    .get("/schemas/:id", async ({ call, params }) => schemas.presentSchema(await schemas.getSchema(svc, { ...call, id: params.id })), {
      detail: doc({ summary: "Get a schema", response: { one: schemas.Schema } }),
    })
    .patch(
      "/schemas/:id",
      async ({ call, params, input }) => schemas.presentSchema(await schemas.updateSchema(svc, { ...call, id: params.id, input: inputOf(schemas.UpdateSchemaInput, input) })),
      {
        detail: doc({
          summary: "Update a schema",
          body: schemas.UpdateSchemaInput,
          response: { one: schemas.Schema },
          errors: { conflict: "a schema with this `name` exists" },
        }),
      },
    )
    .delete("/schemas/:id", ({ call, params }) => schemas.deleteSchema(svc, { ...call, id: params.id }), {
      detail: doc({
        summary: "Delete a schema",
        response: { one: DeleteResult },
        errors: { conflict: "pipelines use the schema" },
      }),
    });
}
