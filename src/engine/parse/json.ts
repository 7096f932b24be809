import { JSONParser, TokenType } from "@streamparser/json";
import { EngineInputError, type ParseLimits, type SourceRecord } from "../types";
import { Batcher, checkColumns, mib } from "./records";

/**
 * Columns of JSON-shaped records: keys in the order first seen. Records are
 * not reshaped; a key first met on record 900 joins the list then.
 */
export class KeyColumns {
  readonly columns: string[] = [];
  private readonly seen = new Set<string>();

  constructor(private readonly limits: ParseLimits) {}

  add(rec: SourceRecord, recordNo: number): void {
    let keys = 0;
    for (const k in rec) {
      keys++;
      if (!this.seen.has(k) && this.columns.length < this.limits.maxColumns) {
        this.seen.add(k);
        this.columns.push(k);
      }
    }
    if (keys > this.limits.maxColumns) checkColumns(keys, this.limits, `Record ${recordNo}`);
  }
}

export function tooDeep(where: string, max: number): EngineInputError {
  return new EngineInputError(
    `${where} nests arrays and objects more than ${max} deep (limits.maxDepth); no retry can read it. Flatten the records, or send them as CSV.`,
  );
}

/**
 * Whether a JSON text nests arrays and objects deeper than `max`. Cheap for
 * ordinary records: the brackets are counted first (by indexOf), and the
 * text is walked, strings skipped, only when there are more than `max`.
 */
export function nestedDeeperThan(s: string, max: number): boolean {
  let open = 0;
  for (let i = s.indexOf("{"); i >= 0 && open <= max; i = s.indexOf("{", i + 1)) open++;
  for (let i = s.indexOf("["); i >= 0 && open <= max; i = s.indexOf("[", i + 1)) open++;
  if (open <= max) return false;
  let depth = 0;
  let inString = false;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) {
      if (++depth > max) return true;
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
  return false;
}

function typeName(v: unknown): string {
  return v === null ? "null" : Array.isArray(v) ? "an array" : typeof v === "object" ? "an object" : `a ${typeof v}`;
}

export function asRecord(v: unknown, where: string): SourceRecord {
  if (v === null || typeof v !== "object" || Array.isArray(v)) {
    throw new EngineInputError(`${where} is ${typeName(v)}, not an object with named fields; each record must be a JSON object.`);
  }
  return v as SourceRecord;
}

/**
 * Follows the token stream until the container at the record path opens, so a
 * wrong recordPath is told apart from an empty array, and a path that names an
 * object or a value is refused before anything is read from it.
 */
class RecordPathFinder {
  private readonly frames: { obj: boolean; key: string; expectKey: boolean; index: number }[] = [];
  found = false;

  constructor(
    private readonly target: string[],
    private readonly describe: string,
  ) {}

  token(t: TokenType, value: unknown): void {
    const top = this.frames[this.frames.length - 1];
    if (top?.obj && top.expectKey) {
      if (t === TokenType.STRING) {
        top.key = value as string;
        top.expectKey = false;
      } else if (t === TokenType.RIGHT_BRACE) this.frames.pop();
      return;
    }
    switch (t) {
      case TokenType.COLON:
        return;
      case TokenType.COMMA:
        if (top?.obj) top.expectKey = true;
        else if (top) top.index++;
        return;
      case TokenType.RIGHT_BRACE:
      case TokenType.RIGHT_BRACKET:
        this.frames.pop();
        return;
    }
    const here = this.atTarget();
    if (here && t === TokenType.LEFT_BRACKET) {
      this.found = true;
      return;
    }
    if (here) {
      const what = t === TokenType.LEFT_BRACE ? "an object" : t === TokenType.STRING ? "a string" : t === TokenType.NUMBER ? "a number" : "a single value";
      throw new EngineInputError(
        this.target.length === 0
          ? `The JSON file's top level is ${what}, not an array of records. Set mappings.options.recordPath to the member that holds the records (for example "data.items").`
          : `${this.describe} is ${what}, not an array of records. Point mappings.options.recordPath at the array.`,
      );
    }
    if (t === TokenType.LEFT_BRACE || t === TokenType.LEFT_BRACKET) {
      this.frames.push({ obj: t === TokenType.LEFT_BRACE, key: "", expectKey: t === TokenType.LEFT_BRACE, index: 0 });
    }
  }

  private atTarget(): boolean {
    if (this.frames.length !== this.target.length) return false;
    for (let i = 0; i < this.frames.length; i++) {
      const f = this.frames[i]!;
      if ((f.obj ? f.key : String(f.index)) !== this.target[i]) return false;
    }
    return true;
  }
}

/**
 * A JSON array of records (top level, or under the dotted recordPath), read
 * token by token with @streamparser/json; each record is dropped from the
 * parser's tree once emitted, so memory holds one record, not the file.
 */
export async function* parseJson(
  text: AsyncIterable<string>,
  opts: { recordPath?: string; limits: ParseLimits },
  onColumns: (columns: string[]) => void,
): AsyncGenerator<SourceRecord[]> {
  const { limits } = opts;
  const segments = opts.recordPath ? opts.recordPath.split(".").filter((s) => s !== "") : [];
  const describe = `recordPath "${opts.recordPath ?? ""}"`;
  const finder = new RecordPathFinder(segments, describe);
  const parser = new JSONParser({ paths: [segments.length ? `$.${segments.join(".")}.*` : "$.*"], keepStack: false });
  const cols = new KeyColumns(limits);
  onColumns(cols.columns);
  const batch = new Batcher();
  let records = 0;
  let tokenEnd = 0;
  let recordEnd = 0;
  let written = 0;
  let writtenAtLastRecord = 0;

  let depth = 0;
  parser.onToken = ({ token, value, offset }) => {
    tokenEnd = offset;
    if (token === TokenType.LEFT_BRACE || token === TokenType.LEFT_BRACKET) {
      if (++depth > limits.maxDepth) throw tooDeep(`Record ${records + 1}`, limits.maxDepth);
    } else if (token === TokenType.RIGHT_BRACE || token === TokenType.RIGHT_BRACKET) depth--;
    if (!finder.found) finder.token(token, value);
  };
  parser.onValue = ({ value }) => {
    records++;
    if (tokenEnd - recordEnd > limits.maxRecordBytes) {
      throw new EngineInputError(`Record ${records} is larger than ${mib(limits.maxRecordBytes)} (limits.maxRecordBytes).`);
    }
    recordEnd = tokenEnd;
    writtenAtLastRecord = written;
    const rec = asRecord(value, `Record ${records}`);
    cols.add(rec, records);
    batch.push(rec);
  };

  const fail = (err: unknown): never => {
    if (err instanceof EngineInputError) throw err;
    const msg = (err as Error)?.message ?? String(err);
    if (/ended in the middle|ended in mid-parsing|Unexpected end/i.test(msg)) {
      throw new EngineInputError(`The JSON ends before it is complete (after ${records} records): the file looks truncated. (${msg})`);
    }
    throw new EngineInputError(`The JSON is malformed after ${records} complete records: ${msg}`);
  };

  for await (const piece of text) {
    try {
      parser.write(piece);
    } catch (err) {
      fail(err);
    }
    written += piece.length;
    // Bytes piling up without a finished record: one huge record, or a recordPath that matches nothing.
    if (written - writtenAtLastRecord > limits.maxRecordBytes + piece.length) {
      throw new EngineInputError(
        finder.found || segments.length === 0
          ? `Record ${records + 1} is larger than ${mib(limits.maxRecordBytes)} (limits.maxRecordBytes).`
          : `No records at ${describe} in the first ${mib(limits.maxRecordBytes)} of the file; check mappings.options.recordPath.`,
      );
    }
    yield* batch.full();
  }
  if (!parser.isEnded) {
    try {
      parser.end();
    } catch (err) {
      fail(err);
    }
  }
  if (!finder.found) {
    throw new EngineInputError(
      segments.length === 0
        ? "The JSON file holds no array of records."
        : `The JSON file has no array at ${describe}; check mappings.options.recordPath (a dotted path such as "data.items").`,
    );
  }
  yield* batch.rest();
}

/** NDJSON / JSON Lines: one JSON object per line; blank lines are skipped. */
export async function* parseNdjson(
  text: AsyncIterable<string>,
  opts: { limits: ParseLimits },
  onColumns: (columns: string[]) => void,
): AsyncGenerator<SourceRecord[]> {
  const { limits } = opts;
  const cols = new KeyColumns(limits);
  onColumns(cols.columns);
  let partial = "";
  let line = 0;
  let records = 0;
  const batch = new Batcher();

  const take = (raw: string): void => {
    line++;
    if (raw.length > limits.maxRecordBytes) {
      throw new EngineInputError(`Line ${line} is longer than ${mib(limits.maxRecordBytes)} (limits.maxRecordBytes).`);
    }
    const s = raw.trim();
    if (s === "") return;
    if (s.length > limits.maxDepth && nestedDeeperThan(s, limits.maxDepth)) throw tooDeep(`Line ${line}`, limits.maxDepth);
    let v: unknown;
    try {
      v = JSON.parse(s);
    } catch (err) {
      throw new EngineInputError(`Line ${line} is not valid JSON (${(err as Error).message}). Each line of an NDJSON file must be one JSON object.`);
    }
    records++;
    const rec = asRecord(v, `Line ${line}`);
    cols.add(rec, records);
    batch.push(rec);
  };

  for await (const piece of text) {
    let start = 0;
    let nl = piece.indexOf("\n");
    if (nl >= 0 && partial.length > 0) {
      take(partial + piece.slice(0, nl));
      partial = "";
      start = nl + 1;
      nl = piece.indexOf("\n", start);
    }
    while (nl >= 0) {
      take(piece.slice(start, nl));
      start = nl + 1;
      nl = piece.indexOf("\n", start);
    }
    partial = start === 0 ? partial + piece : piece.slice(start);
    if (partial.length > limits.maxRecordBytes) {
      throw new EngineInputError(`Line ${line + 1} is longer than ${mib(limits.maxRecordBytes)} (limits.maxRecordBytes) and has no line break.`);
    }
    yield* batch.full();
  }
  if (partial.length > 0) take(partial);
  if (records === 0) throw new EngineInputError("The NDJSON file has no records (only blank lines).");
  yield* batch.rest();
}
