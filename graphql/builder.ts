import SchemaBuilder from "@pothos/core";
import { DateTimeResolver, JSONResolver } from "graphql-scalars";
import type { Actor, ServiceContext } from "../src/services/context";

export interface GqlContext {
  svc: ServiceContext;
  actor: Actor;
}

export const builder = new SchemaBuilder<{
  Context: GqlContext;
  DefaultFieldNullability: false;
  DefaultInputFieldRequiredness: false;
  Scalars: {
    DateTime: { Input: Date; Output: Date | string };
    JSON: { Input: unknown; Output: unknown };
  };
}>({ defaultFieldNullability: false });

builder.addScalarType("DateTime", DateTimeResolver);
builder.addScalarType("JSON", JSONResolver);
builder.queryType({});
builder.mutationType({});
