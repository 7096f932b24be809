import type { z } from "zod";
import * as schemas from "../../src/services/schemas";
import { sampleAndRest } from "../../src/services/shared/sample";
import { pagination } from "../../src/services/shared/shapes";
import { ById, ByIdWith, input, procedure, router } from "../init";

/** What a typed client may filter by; the service checks the values. */
type ListInput = z.input<typeof schemas.ListSchemasQuery>;

export const schemasRouter = router({
  list: procedure.input(input<ListInput | undefined>()).query(async ({ ctx, input: query }) => {
    const page = await schemas.listSchemas(ctx.svc, { actor: ctx.actor, query: query ?? {} });
    return { data: page.items.map(schemas.presentSchema), pagination: pagination(page) };
  }),
  get: procedure.input(ById).query(async ({ ctx, input: { id } }) => schemas.presentSchema(await schemas.getSchema(ctx.svc, { actor: ctx.actor, id }))),
  create: procedure
    .input(input<schemas.CreateSchemaInput>())
    .mutation(async ({ ctx, input: data }) => schemas.presentSchema(await schemas.createSchema(ctx.svc, { actor: ctx.actor, input: data }))),
  update: procedure
    .input(ByIdWith<schemas.UpdateSchemaInput>())
    .mutation(async ({ ctx, input: { id, data } }) => schemas.presentSchema(await schemas.updateSchema(ctx.svc, { actor: ctx.actor, id, input: data }))),
  /** Drafts a schema from a sample given as text or base64; nothing is stored. A mutation, for its large input. */
  infer: procedure.input(input<schemas.InferSchemaSampleInput>()).mutation(async ({ ctx, input: raw, signal }) => {
    const { sample, rest } = await sampleAndRest(raw, ctx.svc.settings.preview.maxBytes);
    return schemas.inferSchema(ctx.svc, { actor: ctx.actor, sample, input: rest, signal });
  }),
  delete: procedure.input(ById).mutation(({ ctx, input: { id } }) => schemas.deleteSchema(ctx.svc, { actor: ctx.actor, id })),
  /** Checks a definition as a save would and stores nothing; the first problem comes back as data (an editor asks on every change). */
  check: procedure
    .input(input<schemas.CheckSchemaInput>())
    .mutation(({ ctx, input: data }) => schemas.checkSchemaDefinition(ctx.svc, { actor: ctx.actor, input: data })),
  /** The pipelines that validate rows against the schema. */
  pipelines: procedure.input(ById).query(({ ctx, input: { id } }) => schemas.schemaPipelines(ctx.svc, { actor: ctx.actor, id })),
});
