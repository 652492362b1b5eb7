/**
 * The YAML subset docker-compose.yml and the dynamic config are written in, for the tests that read
 * them: the compose checks (test/unit/docker-compose.test.ts) and `npm run test:cluster`, which
 * runs what the compose file describes with the environment it sets.
 */
// ---------------------------------------------------------------------------------------------------------
// A YAML subset: block mappings and sequences, plain / 'single' / "double" quoted scalars, flow sequences of
// scalars, `{}` / `[]`, comments. Scalars stay strings. Anything else (tabs, anchors, aliases, merge keys,
// block scalars, flow mappings, documents, duplicate keys) throws, so the file cannot drift into syntax
// this parser would misread.
// ---------------------------------------------------------------------------------------------------------
export type YamlValue = string | null | YamlValue[] | { [key: string]: YamlValue };
export type YamlMap = { [key: string]: YamlValue };

interface Line {
  indent: number;
  text: string;
  no: number;
}

export class YamlSubsetError extends Error {}

function stripComment(text: string): string {
  let quote: string | null = null;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quote) {
      if (c === '\\' && quote === '"') i++;
      else if (c === quote) quote = null;
    } else if (c === '"' || c === "'") {
      if (i === 0 || /[\s[,:-]/.test(text[i - 1] ?? '')) quote = c;
    } else if (c === '#' && (i === 0 || /\s/.test(text[i - 1] ?? ''))) {
      return text.slice(0, i).trimEnd();
    }
  }
  if (quote) throw new YamlSubsetError(`unterminated quote in: ${text}`);
  return text.trimEnd();
}

/** Index of the `:` that separates a mapping key from its value, or -1 when `text` is not a mapping entry. */
function keySeparator(text: string): number {
  if (text.startsWith('"') || text.startsWith("'")) {
    const q = text[0] as string;
    let i = 1;
    while (i < text.length) {
      if (text[i] === '\\' && q === '"') i += 2;
      else if (text[i] === q && q === "'" && text[i + 1] === "'") i += 2;
      else if (text[i] === q) break;
      else i++;
    }
    const after = text.slice(i + 1);
    return /^:(\s|$)/.test(after) ? i + 1 : -1;
  }
  if (text.startsWith('[') || text.startsWith('{')) return -1;
  const m = /:(\s|$)/.exec(text);
  return m ? m.index : -1;
}

function parseScalar(raw: string, no: number): YamlValue {
  const text = raw.trim();
  const fail = (why: string): never => {
    throw new YamlSubsetError(`line ${no}: ${why}: ${text}`);
  };
  if (text === '' || text === '~' || text === 'null') return null;
  if (/^[&*!|>]/.test(text) || text.startsWith('<<')) fail('unsupported YAML feature');
  if (text.startsWith('"')) {
    if (!text.endsWith('"') || text.length < 2) fail('bad double-quoted scalar');
    try {
      return JSON.parse(text) as string;
    } catch {
      return fail('unsupported escape in double-quoted scalar');
    }
  }
  if (text.startsWith("'")) {
    if (!text.endsWith("'") || text.length < 2) fail('bad single-quoted scalar');
    const body = text.slice(1, -1);
    if (/'(?!')/.test(body.replace(/''/g, ''))) fail('bad single-quoted scalar');
    return body.replace(/''/g, "'");
  }
  if (text === '{}') return {};
  if (text.startsWith('{')) fail('flow mappings are not supported');
  if (text.startsWith('[')) {
    if (!text.endsWith(']')) fail('bad flow sequence');
    const body = text.slice(1, -1).trim();
    if (body === '') return [];
    const items: string[] = [];
    let quote: string | null = null;
    let start = 0;
    for (let i = 0; i < body.length; i++) {
      const c = body[i];
      if (quote) {
        if (c === '\\' && quote === '"') i++;
        else if (c === quote) quote = null;
      } else if (c === '"' || c === "'") quote = c;
      else if (c === '[' || c === '{') fail('nested flow collections are not supported');
      else if (c === ',') {
        items.push(body.slice(start, i));
        start = i + 1;
      }
    }
    items.push(body.slice(start));
    return items.map((item) => {
      const value = parseScalar(item, no);
      if (typeof value !== 'string') fail('flow sequence items must be scalars');
      return value;
    });
  }
  return text;
}

export function parseYamlSubset(source: string): YamlValue {
  const lines: Line[] = [];
  source.split('\n').forEach((rawLine, index) => {
    const line = rawLine.replace(/\r$/, '');
    const lead = /^[ \t]*/.exec(line)?.[0] ?? '';
    if (lead.includes('\t')) throw new YamlSubsetError(`line ${index + 1}: tab in indentation`);
    const text = stripComment(line.slice(lead.length));
    if (text === '') return;
    if (text === '---' || text === '...')
      throw new YamlSubsetError(`line ${index + 1}: documents not supported`);
    lines.push({ indent: lead.length, text, no: index + 1 });
  });
  let pos = 0;
  const isItem = (text: string): boolean => text === '-' || text.startsWith('- ');

  function parseNode(indent: number): YamlValue {
    const line = lines[pos];
    if (!line || line.indent < indent) return null;
    return isItem(line.text) ? parseSequence(line.indent) : parseMapping(line.indent);
  }

  function parseValueAfter(indent: number, rest: string, no: number, allowSameIndentSeq: boolean): YamlValue {
    if (rest !== '') return parseScalar(rest, no);
    const next = lines[pos];
    if (next && next.indent > indent) return parseNode(next.indent);
    if (allowSameIndentSeq && next && next.indent === indent && isItem(next.text))
      return parseSequence(indent);
    return null;
  }

  function parseMapping(indent: number): YamlMap {
    const map: YamlMap = {};
    while (pos < lines.length) {
      const line = lines[pos] as Line;
      if (line.indent < indent) break;
      if (line.indent > indent) throw new YamlSubsetError(`line ${line.no}: unexpected indentation`);
      if (isItem(line.text)) break;
      const sep = keySeparator(line.text);
      if (sep < 0) throw new YamlSubsetError(`line ${line.no}: expected "key: value": ${line.text}`);
      const key = parseScalar(line.text.slice(0, sep), line.no);
      if (typeof key !== 'string') throw new YamlSubsetError(`line ${line.no}: unsupported key`);
      if (Object.hasOwn(map, key)) throw new YamlSubsetError(`line ${line.no}: duplicate key ${key}`);
      pos++;
      map[key] = parseValueAfter(indent, line.text.slice(sep + 1).trim(), line.no, true);
    }
    return map;
  }

  function parseSequence(indent: number): YamlValue[] {
    const list: YamlValue[] = [];
    while (pos < lines.length) {
      const line = lines[pos] as Line;
      if (line.indent < indent) break;
      if (line.indent > indent) throw new YamlSubsetError(`line ${line.no}: unexpected indentation`);
      if (!isItem(line.text)) break;
      const content = line.text.slice(1).trimStart();
      if (content === '') {
        pos++;
        list.push(parseValueAfter(indent, '', line.no, false));
      } else if (keySeparator(content) >= 0) {
        // `- key: value` opens a mapping whose keys line up with `key`.
        const inner = indent + (line.text.length - content.length);
        lines[pos] = { indent: inner, text: content, no: line.no };
        list.push(parseMapping(inner));
      } else {
        pos++;
        list.push(parseScalar(content, line.no));
      }
    }
    return list;
  }

  const doc = parseNode(0);
  if (pos !== lines.length) throw new YamlSubsetError(`line ${lines[pos]?.no}: unexpected content`);
  return doc;
}

// ---------------------------------------------------------------------------------------------------------
// Reading a parsed document.
// ---------------------------------------------------------------------------------------------------------
export const isMap = (v: YamlValue | undefined): v is YamlMap =>
  typeof v === 'object' && v !== null && !Array.isArray(v);
export const asMap = (v: YamlValue | undefined): YamlMap => (isMap(v) ? v : {});
export const asList = (v: YamlValue | undefined): YamlValue[] => (Array.isArray(v) ? v : []);

/** The value at `path` (mapping keys), or undefined when any step is missing or not a mapping. */
export function get(value: YamlValue | undefined, ...path: string[]): YamlValue | undefined {
  let current = value;
  for (const key of path) {
    if (!isMap(current)) return undefined;
    current = current[key];
  }
  return current;
}

/** Compose `environment`, whether written as a mapping or as a list of `KEY=value`. */
export function environmentOf(service: YamlValue | undefined): Map<string, string | null> {
  const env = get(service, 'environment');
  const out = new Map<string, string | null>();
  if (Array.isArray(env)) {
    for (const item of env) {
      if (typeof item !== 'string') continue;
      const eq = item.indexOf('=');
      if (eq < 0) out.set(item, null);
      else out.set(item.slice(0, eq), item.slice(eq + 1));
    }
  } else if (isMap(env)) {
    for (const [key, value] of Object.entries(env)) out.set(key, typeof value === 'string' ? value : null);
  }
  return out;
}
