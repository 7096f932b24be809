import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { createServiceContext, stopServiceContext } from "./context";
import { type Config, ConfigError, parseConfig } from "./config";
import { isAppError } from "./domain/errors";
import { createLogger } from "./logger";
import type { ServiceContext } from "./services/context";
import { createKey } from "./services/keys/create-key";
import { listKeys } from "./services/keys/list-keys";
import { revokeKey } from "./services/keys/revoke-key";
import { createWorkspace } from "./services/workspaces/create-workspace";
import { FEATURES } from "./services/workspaces/shapes";
import { setDefaultVersion, setFeature } from "./services/workspaces/update-workspace";
import { verifyByOperator } from "./services/people";

/**
 * The admin CLI: `bun run cli <command> [--flags]`. Each command prints one
 * JSON object on stdout; errors go to stderr with a non-zero exit code.
 * It uses the same configuration (DATA_DIR, DATABASE_URL, ENCRYPTION_KEY) as
 * the service and calls the same services. Every answer names the database
 * and DATA_DIR it used; it refuses to start a new empty SQLite database
 * unless given --init, so a CLI run from the wrong folder cannot mint keys
 * that the running server has never heard of.
 */
const USAGE = `usage: bun run cli <command> [options]

  workspace:create  --name NAME --email EMAIL [--version (2024-09-01 | 2026-05-25 | none)]   default: 2026-05-25
  workspace:feature --workspace ID (--enable | --disable) FEATURE     features: ${FEATURES.join(", ")}
  workspace:version --workspace ID --version (2024-09-01 | 2026-05-25 | none)
  key:create        --workspace ID [--role admin|member] [--name NAME]
  key:revoke        --key KEY_ID [--workspace ID]
  key:list          --workspace ID
  user:verify       --email EMAIL     confirm a person's e-mail address (where no outgoing mail is configured)

  Every command uses the service's database: DATABASE_URL, or DATA_DIR/service.db (DATA_DIR defaults to ./data).
  --init            create that SQLite database when it does not exist yet (otherwise refused)`;

type Flags = Record<string, string | boolean | undefined>;

class UsageError extends Error {}
class NoDatabaseError extends Error {}

/** Which database and DATA_DIR a command used, as printed with its answer (a Postgres URL without its password). */
function target(config: Config): { database: string; dataDir: string } {
  let database: string;
  if (config.database.kind === "sqlite") database = `sqlite:${config.database.path}`;
  else {
    const url = new URL(config.database.url);
    url.password = "";
    database = url.toString();
  }
  return { database, dataDir: resolve(config.dataDir) };
}

function need(flags: Flags, name: string): string {
  const v = flags[name];
  if (typeof v !== "string" || v === "") throw new UsageError(`--${name} is required`);
  return v;
}

const commands: Record<string, (svc: ServiceContext, flags: Flags) => Promise<unknown>> = {
  async "workspace:create"(svc, f) {
    // Unset: pinned to the newest version; `none`: no default, so requests without the header get the fallback.
    const version = typeof f.version === "string" ? (f.version === "none" ? null : f.version) : undefined;
    const { workspace, key } = await createWorkspace(svc, { name: need(f, "name"), email: need(f, "email"), defaultVersion: version as never });
    return {
      workspaceId: workspace.id,
      name: workspace.name,
      email: workspace.email,
      apiKey: key.apiKey,
      keyId: key.id,
      role: key.role,
      defaultVersion: workspace.defaultVersion,
      note: "Store the API key now: it is shown only once.",
    };
  },
  async "workspace:feature"(svc, f) {
    const enable = typeof f.enable === "string" ? f.enable : undefined;
    const disable = typeof f.disable === "string" ? f.disable : undefined;
    if ((enable === undefined) === (disable === undefined)) throw new UsageError("give exactly one of --enable FEATURE or --disable FEATURE");
    const ws = await setFeature(svc, { workspaceId: need(f, "workspace"), feature: (enable ?? disable)!, enabled: enable !== undefined });
    return { workspaceId: ws.id, features: ws.features };
  },
  async "workspace:version"(svc, f) {
    const v = need(f, "version");
    const ws = await setDefaultVersion(svc, { workspaceId: need(f, "workspace"), version: v === "none" ? null : v });
    return { workspaceId: ws.id, defaultVersion: ws.defaultVersion };
  },
  async "key:create"(svc, f) {
    const key = await createKey(svc, {
      workspaceId: need(f, "workspace"),
      role: (typeof f.role === "string" ? f.role : "member") as never,
      name: typeof f.name === "string" ? f.name : undefined,
    });
    return { ...key, note: "Store the API key now: it is shown only once." };
  },
  async "key:revoke"(svc, f) {
    return revokeKey(svc, { keyId: need(f, "key"), workspaceId: typeof f.workspace === "string" ? f.workspace : undefined });
  },
  async "key:list"(svc, f) {
    return { keys: await listKeys(svc, { workspaceId: need(f, "workspace") }) };
  },
  async "user:verify"(svc, f) {
    return verifyByOperator(svc, { email: need(f, "email") });
  },
};

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  const run = command ? commands[command] : undefined;
  if (!run) {
    console.error(command ? `unknown command '${command}'\n\n${USAGE}` : USAGE);
    return 2;
  }
  let flags: Flags;
  try {
    flags = parseArgs({
      args: rest,
      options: {
        name: { type: "string" },
        email: { type: "string" },
        version: { type: "string" },
        workspace: { type: "string" },
        enable: { type: "string" },
        disable: { type: "string" },
        role: { type: "string" },
        key: { type: "string" },
        init: { type: "boolean" },
      },
      strict: true,
    }).values;
  } catch (e) {
    console.error(`${(e as Error).message}\n\n${USAGE}`);
    return 2;
  }
  const config = parseConfig(process.env);
  if (config.database.kind === "sqlite" && !existsSync(config.database.path) && flags.init !== true) {
    throw new NoDatabaseError(
      `no database at ${config.database.path} (DATA_DIR=${process.env.DATA_DIR ?? "./data"}, DATABASE_URL unset): set DATA_DIR or DATABASE_URL as the service has them, or add --init to create a new empty database there`,
    );
  }
  const svc = await createServiceContext({ config, log: createLogger("silent") });
  try {
    const out = await run(svc, flags);
    console.log(JSON.stringify({ ...(out as object), ...target(config) }, null, 2));
    return 0;
  } finally {
    await stopServiceContext(svc);
    await svc.db.close();
  }
}

try {
  process.exitCode = await main(process.argv.slice(2));
} catch (e) {
  if (e instanceof UsageError) {
    console.error(`${e.message}\n\n${USAGE}`);
    process.exitCode = 2;
  } else if (isAppError(e) || e instanceof ConfigError || e instanceof NoDatabaseError) {
    console.error(`error: ${e.message}`);
    process.exitCode = 1;
  } else throw e;
}
