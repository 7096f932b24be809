import { type Database, openDatabase } from "../db/client";
import { createSecretBox, loadOrCreateKeyFile } from "./adapters/crypto/secret-box";
import type { SftpClientPort } from "./adapters/sftp/port";
import { tcpProbe } from "./adapters/sftp/tcp-probe";
import type { Config } from "./config";
import { type Clock, systemClock } from "./domain/clock";
import { createLogger, type Logger } from "./logger";
import type { ServiceContext } from "./services/context";

export interface ServiceOptions {
  config: Config;
  clock?: Clock;
  log?: Logger;
  db?: Database;
  sftp?: SftpClientPort;
}

/** The adapters, wired once; the admin CLI uses this alone, the service mounts its transports on it. */
export async function createServiceContext(opts: ServiceOptions): Promise<ServiceContext> {
  const { config } = opts;
  return {
    db: opts.db ?? (await openDatabase(config.database)),
    clock: opts.clock ?? systemClock,
    secrets: createSecretBox(config.encryptionKey ?? loadOrCreateKeyFile(config.dataDir)),
    log: opts.log ?? createLogger(config.logLevel),
    sftp: opts.sftp ?? tcpProbe,
    settings: {
      publicUrl: config.publicUrl,
      sftpHost: config.sftpHost,
      sftpPort: config.sftpPort,
      emailDomain: config.emailDomain,
    },
  };
}
