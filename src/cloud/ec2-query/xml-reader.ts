// A small reader for the XML that EC2 and STS answer with: elements, text and entities, nothing
// else (attributes such as xmlns are skipped; EC2 puts no data in them). Lists are `<item>`
// children. Typed accessors check a field's shape once, here at the edge: a field of the wrong
// shape is an XmlShapeError naming its path.

/** A reply that is not the XML we expect, or a field of the wrong shape. */
export class XmlShapeError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'XmlShapeError';
  }
}

export class XmlElement {
  constructor(
    readonly name: string,
    readonly children: readonly XmlElement[],
    /** The element's own text (entities decoded), its children's text not included. */
    readonly text: string,
    /** Where the element sits, e.g. "DescribeSubnetsResponse.subnetSet.item"; for error messages. */
    readonly path: string,
  ) {}

  /** The first child element named `name`. */
  child(name: string): XmlElement | undefined {
    return this.children.find((c) => c.name === name);
  }

  /** The text of child `name`; undefined when the child is absent. */
  string(name: string): string | undefined {
    return this.child(name)?.text;
  }

  int(name: string): number | undefined {
    const text = this.string(name)?.trim();
    if (text === undefined) return undefined;
    const value = Number(text);
    if (!/^-?\d+$/.test(text) || !Number.isSafeInteger(value)) {
      throw new XmlShapeError(`${this.path}.${name} is not an integer (got ${JSON.stringify(text)})`);
    }
    return value;
  }

  bool(name: string): boolean | undefined {
    const text = this.string(name)?.trim();
    if (text === undefined) return undefined;
    if (text !== 'true' && text !== 'false') {
      throw new XmlShapeError(`${this.path}.${name} is not true or false (got ${JSON.stringify(text)})`);
    }
    return text === 'true';
  }

  /** The `<item>` children of list `name` (`<name><item>…</item>…</name>`); [] when absent. */
  items(name: string): XmlElement[] {
    return this.child(name)?.children.filter((c) => c.name === 'item') ?? [];
  }
}

const NAMED_ENTITIES: Readonly<Record<string, string>> = {
  lt: '<',
  gt: '>',
  amp: '&',
  quot: '"',
  apos: "'",
};

function decodeEntities(raw: string, where: string): string {
  if (!raw.includes('&')) return raw;
  return raw.replace(/&([^;&\s]*);?/g, (whole, ref: string) => {
    if (!whole.endsWith(';')) throw new XmlShapeError(`unterminated entity ${whole} in ${where}`);
    const named = NAMED_ENTITIES[ref];
    if (named !== undefined) return named;
    const code = ref.startsWith('#x')
      ? Number.parseInt(ref.slice(2), 16)
      : ref.startsWith('#')
        ? Number.parseInt(ref.slice(1), 10)
        : Number.NaN;
    if (!Number.isInteger(code) || code < 0 || code > 0x10ffff) {
      throw new XmlShapeError(`unknown entity &${ref}; in ${where}`);
    }
    return String.fromCodePoint(code);
  });
}

interface OpenElement {
  readonly name: string;
  readonly path: string;
  readonly children: XmlElement[];
  text: string;
}

/** Parses a whole document; returns its root element. */
export function parseXml(document: string): XmlElement {
  const stack: OpenElement[] = [];
  let root: XmlElement | undefined;
  let at = 0;
  const fail = (why: string): never => {
    throw new XmlShapeError(`malformed XML at offset ${at}: ${why}`);
  };
  const close = (open: OpenElement) => {
    const element = new XmlElement(open.name, open.children, open.text, open.path);
    const parent = stack[stack.length - 1];
    if (parent !== undefined) parent.children.push(element);
    else if (root === undefined) root = element;
    else fail('more than one root element');
  };
  while (at < document.length) {
    const lt = document.indexOf('<', at);
    const textEnd = lt === -1 ? document.length : lt;
    const text = document.slice(at, textEnd);
    const top = stack[stack.length - 1];
    if (top !== undefined) top.text += decodeEntities(text, top.path);
    else if (text.trim() !== '') fail('text outside the root element');
    if (lt === -1) break;
    at = lt;
    if (document.startsWith('<?', at)) {
      at = skipPast(document, '?>', at, fail);
    } else if (document.startsWith('<!--', at)) {
      at = skipPast(document, '-->', at, fail);
    } else if (document.startsWith('<![CDATA[', at)) {
      const end = document.indexOf(']]>', at);
      if (end === -1) fail('unterminated CDATA');
      if (top === undefined) fail('CDATA outside the root element');
      else top.text += document.slice(at + 9, end);
      at = end + 3;
    } else if (document.startsWith('<!', at)) {
      at = skipPast(document, '>', at, fail);
    } else if (document.startsWith('</', at)) {
      const gt = document.indexOf('>', at);
      if (gt === -1) fail('unterminated end tag');
      const name = document.slice(at + 2, gt).trim();
      const open = stack.pop();
      if (open === undefined || open.name !== name) fail(`</${name}> does not close <${open?.name ?? ''}>`);
      else close(open);
      at = gt + 1;
    } else {
      const gt = document.indexOf('>', at);
      if (gt === -1) fail('unterminated start tag');
      const selfClosing = document[gt - 1] === '/';
      const inner = document.slice(at + 1, selfClosing ? gt - 1 : gt);
      const name = inner.split(/\s/, 1)[0] ?? '';
      if (!/^[A-Za-z_][\w.:-]*$/.test(name)) fail(`bad element name ${JSON.stringify(name)}`);
      const parent = stack[stack.length - 1];
      const open: OpenElement = {
        name,
        path: parent === undefined ? name : `${parent.path}.${name}`,
        children: [],
        text: '',
      };
      if (selfClosing) close(open);
      else stack.push(open);
      at = gt + 1;
    }
  }
  if (stack.length > 0) fail(`<${stack[stack.length - 1]?.name}> is never closed`);
  if (root === undefined) fail('no root element');
  return root as XmlElement;
}

function skipPast(document: string, terminator: string, from: number, fail: (why: string) => never): number {
  const end = document.indexOf(terminator, from);
  if (end === -1) fail(`no ${terminator} after ${document.slice(from, from + 4)}`);
  return end + terminator.length;
}
