/**
 * The baseline of bench/api.ts: a bare Elysia app with the service's route
 * shape, answering each route with a fixed JSON body (the service's own
 * answer, captured by the benchmark). No key check, no database, no hooks:
 * what the HTTP layer alone can do on this machine.
 *   bun bench/bare-elysia.ts <port> <bodies.json>
 */
import { readFileSync } from "node:fs";
import { Elysia } from "elysia";

const [portArg, bodiesPath] = process.argv.slice(2);
const bodies = JSON.parse(readFileSync(bodiesPath!, "utf8")) as Record<"pipeline" | "connections" | "created" | "graphql" | "trpc", unknown>;

new Elysia()
  .get("/healthz", () => ({ ok: true }))
  .get("/pipelines/:id", () => bodies.pipeline)
  .get("/connections", () => bodies.connections)
  .post("/pipelines", () => bodies.created)
  .post("/graphql", () => bodies.graphql)
  .get("/trpc/*", () => bodies.trpc)
  .listen({ port: Number(portArg), hostname: "127.0.0.1" });
process.on("SIGTERM", () => process.exit(0));
