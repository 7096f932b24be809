import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join } from "node:path";

export interface CliConfig {
  url: string;
  apiKey: string;
}

/** `$FPS_CONFIG`, else `$XDG_CONFIG_HOME/fps/config.json`, else `~/.config/fps/config.json`. */
export function configPath(env: NodeJS.ProcessEnv = process.env): string {
  if (env.FPS_CONFIG) return env.FPS_CONFIG;
  return join(env.XDG_CONFIG_HOME || join(homedir(), ".config"), "fps", "config.json");
}

/** The key and URL: the environment (`FPS_API_KEY`, `FPS_URL`) first, then the file `fps login` wrote. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Partial<CliConfig> {
  let saved: Partial<CliConfig> = {};
  const path = configPath(env);
  if (existsSync(path)) {
    try {
      saved = JSON.parse(readFileSync(path, "utf8")) as Partial<CliConfig>;
    } catch {
      throw new Error(`${path} is not valid JSON: run \`fps login\` again`);
    }
  }
  return { url: env.FPS_URL || saved.url, apiKey: env.FPS_API_KEY || saved.apiKey };
}

/** Written readable by its owner only (0600, in a 0700 folder): it holds an API key. */
export function saveConfig(config: CliConfig, env: NodeJS.ProcessEnv = process.env): string {
  const path = configPath(env);
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  writeFileSync(path, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600 });
  chmodSync(path, 0o600);
  return path;
}
