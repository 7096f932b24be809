import { XMLParser } from "fast-xml-parser";
import { EngineInputError, type ParseLimits, type SourceRecord } from "../types";
import { KeyColumns } from "./json";
import { Batcher, mib } from "./records";

/**
 * One record element parsed by fast-xml-parser: attributes as `@name`, child
 * elements as members (repeated ones as arrays), text kept as text. No DOCTYPE
 * ever reaches it (the scanner refuses them), so no entity can be declared.
 */
const recordParser = new XMLParser({
  ignoreAttributes: false,
  attributeNamePrefix: "@",
  textNodeName: "#text",
  parseTagValue: false,
  parseAttributeValue: false,
  trimValues: true,
  processEntities: true,
  // Character references (&#65;) are decoded with the named HTML ones; both are fixed tables, never declarations.
  htmlEntities: true,
  ignoreDeclaration: true,
  ignorePiTags: true,
});

const NAME_END = /[\s/>]/;

/**
 * XML records, streaming: a light scanner walks the tags (skipping comments,
 * CDATA and processing instructions, checking that tags nest) and cuts out
 * each element at the record path; only that slice is parsed. Memory holds
 * one record plus the unread rest of the current text piece.
 */
export async function* parseXml(
  text: AsyncIterable<string>,
  opts: { recordPath?: string; limits: ParseLimits },
  onColumns: (columns: string[]) => void,
): AsyncGenerator<SourceRecord[]> {
  const { limits } = opts;
  const wanted = opts.recordPath ? opts.recordPath.split(".").filter((s) => s !== "") : [];
  const cols = new KeyColumns(limits);
  onColumns(cols.columns);

  let target: string[] | null = null; // element names from the root down to the record, once the root is known
  const stack: string[] = [];
  let buf = "";
  let pos = 0;
  let linesBefore = 0; // line breaks in text already dropped from buf
  let recordStart = -1;
  let records = 0;
  let rootSeen = false;
  const siblings = new Set<string>(); // names seen where records were expected, for the error message
  const batch = new Batcher();

  const lineAt = (at: number): number => {
    let n = linesBefore + 1;
    for (let i = buf.indexOf("\n"); i >= 0 && i < at; i = buf.indexOf("\n", i + 1)) n++;
    return n;
  };
  const fail = (at: number, message: string): never => {
    throw new EngineInputError(`XML line ${lineAt(at)}: ${message}`);
  };
  const atRecordPath = (): boolean => {
    if (!target || stack.length !== target.length) return false;
    for (let i = 0; i < stack.length; i++) if (stack[i] !== target[i] && target[i] !== "*") return false;
    return true;
  };
  const emit = (from: number, to: number): void => {
    if (to - from > limits.maxRecordBytes) fail(from, `record ${records + 1} is larger than ${mib(limits.maxRecordBytes)} (limits.maxRecordBytes).`);
    const slice = buf.slice(from, to);
    let parsed: Record<string, unknown>;
    try {
      parsed = recordParser.parse(slice) as Record<string, unknown>;
    } catch (err) {
      fail(from, `record ${records + 1} cannot be read (${(err as Error).message}).`);
    }
    const value = parsed![stack[stack.length - 1] ?? ""] ?? parsed![Object.keys(parsed!)[0] ?? ""];
    const rec: SourceRecord = value === "" || value === undefined ? {} : typeof value === "object" && value !== null ? (value as SourceRecord) : { "#text": value };
    records++;
    cols.add(rec, records);
    batch.push(rec);
  };

  /** Walks complete tags in buf; returns false when it needs more text. */
  const scan = (): boolean => {
    for (;;) {
      const lt = buf.indexOf("<", pos);
      if (lt < 0) {
        pos = buf.length;
        return false;
      }
      pos = lt;
      const next = buf[lt + 1];
      if (next === undefined) return false;
      if (next === "!") {
        if (buf.length < lt + 9) return false;
        if (buf.startsWith("<!--", lt)) {
          const end = buf.indexOf("-->", lt + 4);
          if (end < 0) return false;
          pos = end + 3;
        } else if (buf.startsWith("<![CDATA[", lt)) {
          const end = buf.indexOf("]]>", lt + 9);
          if (end < 0) return false;
          pos = end + 3;
        } else if (/^<!DOCTYPE/i.test(buf.slice(lt, lt + 9))) {
          fail(lt, "DOCTYPE declarations are refused (entities and DTDs are never expanded). Remove the <!DOCTYPE ...> from the file.");
        } else {
          fail(lt, `unexpected "${buf.slice(lt, lt + 12)}" (a declaration is not allowed here).`);
        }
        continue;
      }
      if (next === "?") {
        const end = buf.indexOf("?>", lt + 2);
        if (end < 0) return false;
        pos = end + 2;
        continue;
      }
      const end = tagEnd(buf, lt + 1);
      if (end < 0) return false;
      if (next === "/") {
        const name = buf.slice(lt + 2, end).trim();
        const open = stack[stack.length - 1];
        if (open === undefined) fail(lt, `</${name}> closes an element that was never opened.`);
        if (open !== name) fail(lt, `</${name}> closes <${open}>; the XML is malformed.`);
        if (recordStart >= 0 && atRecordPath()) {
          emit(recordStart, end + 1);
          recordStart = -1;
        }
        stack.pop();
        pos = end + 1;
        continue;
      }
      const m = NAME_END.exec(buf.slice(lt + 1, Math.min(end + 1, lt + 256)));
      const name = buf.slice(lt + 1, lt + 1 + (m ? m.index : 0));
      if (name === "") fail(lt, `a tag without a name ("${buf.slice(lt, Math.min(end + 1, lt + 20))}").`);
      const selfClosing = buf[end - 1] === "/";
      if (!rootSeen) {
        rootSeen = true;
        // Without a recordPath every child of the root is a record, whatever its name.
        target = wanted.length === 0 ? [name, "*"] : wanted[0] === name ? wanted : [name, ...wanted];
      }
      stack.push(name);
      if (stack.length > limits.maxDepth) fail(lt, `elements are nested more than ${limits.maxDepth} deep (limits.maxDepth).`);
      if (recordStart < 0) {
        if (atRecordPath()) recordStart = lt;
        else if (target && stack.length === target.length && siblings.size < 10) siblings.add(name);
      }
      if (selfClosing) {
        if (recordStart === lt) {
          emit(lt, end + 1);
          recordStart = -1;
        }
        stack.pop();
      }
      pos = end + 1;
    }
  };

  for await (const piece of text) {
    // Keep only what is still needed: the open record, or the tag being read.
    const keep = recordStart >= 0 ? recordStart : pos;
    if (keep > 0) {
      for (let i = buf.indexOf("\n"); i >= 0 && i < keep; i = buf.indexOf("\n", i + 1)) linesBefore++;
      buf = buf.slice(keep);
      pos -= keep;
      if (recordStart >= 0) recordStart -= keep;
    }
    buf += piece;
    scan();
    const held = recordStart >= 0 ? buf.length - recordStart : buf.length - pos;
    if (held > limits.maxRecordBytes) {
      fail(
        recordStart >= 0 ? recordStart : pos,
        recordStart >= 0
          ? `record ${records + 1} is larger than ${mib(limits.maxRecordBytes)} (limits.maxRecordBytes).`
          : `a tag or comment longer than ${mib(limits.maxRecordBytes)} (limits.maxRecordBytes).`,
      );
    }
    yield* batch.full();
  }
  if (!rootSeen) throw new EngineInputError("The file holds no XML element.");
  if (stack.length > 0) {
    throw new EngineInputError(`The XML ends inside <${stack[stack.length - 1]}> (line ${lineAt(buf.length)}): the file looks truncated.`);
  }
  if (records === 0 && wanted.length > 0 && siblings.size > 0) {
    throw new EngineInputError(
      `No <${wanted[wanted.length - 1]}> elements at recordPath "${opts.recordPath}"; found <${[...siblings].join(">, <")}> there. Check mappings.options.recordPath (element names from the root, dotted).`,
    );
  }
  yield* batch.rest();
}

/** Index of the `>` ending the tag whose name starts at `from`, skipping quoted attribute values; -1 when not in buf yet. */
function tagEnd(buf: string, from: number): number {
  let i = from;
  for (;;) {
    const gt = buf.indexOf(">", i);
    if (gt < 0) return -1;
    const dq = buf.indexOf('"', i);
    const sq = buf.indexOf("'", i);
    const q = dq < 0 ? sq : sq < 0 ? dq : Math.min(dq, sq);
    if (q < 0 || q > gt) return gt;
    const close = buf.indexOf(buf[q]!, q + 1);
    if (close < 0) return -1;
    i = close + 1;
  }
}
