// XML of the EC2 Query API (namespace 2016-11-15). Replies are built from plain values:
// an object becomes child elements, an array becomes `<item>` children, undefined is omitted.

export const EC2_NAMESPACE = 'http://ec2.amazonaws.com/doc/2016-11-15/';

export type XmlValue = string | number | boolean | Date | undefined | readonly XmlValue[] | XmlObject;
export interface XmlObject {
  readonly [element: string]: XmlValue;
}

export function escapeXml(text: string): string {
  return text.replace(/[<>&'"]/g, (c) => `&#${c.charCodeAt(0)};`);
}

function render(value: XmlValue): string {
  if (value === undefined) return '';
  if (value instanceof Date) return value.toISOString();
  if (typeof value === 'string') return escapeXml(value);
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (Array.isArray(value)) return value.map((v) => `<item>${render(v)}</item>`).join('');
  return renderObject(value as XmlObject);
}

function renderObject(obj: XmlObject): string {
  let out = '';
  for (const [name, v] of Object.entries(obj)) {
    if (v === undefined) continue;
    out += `<${name}>${render(v)}</${name}>`;
  }
  return out;
}

export function ec2Response(action: string, requestId: string, body: XmlObject): string {
  return (
    `<?xml version="1.0" encoding="UTF-8"?>\n` +
    `<${action}Response xmlns="${EC2_NAMESPACE}"><requestId>${escapeXml(requestId)}</requestId>` +
    `${renderObject(body)}</${action}Response>`
  );
}

export function ec2ErrorResponse(code: string, message: string, requestId: string): string {
  return (
    `<?xml version="1.0" encoding="UTF-8"?>\n` +
    `<Response><Errors><Error><Code>${escapeXml(code)}</Code><Message>${escapeXml(message)}</Message></Error>` +
    `</Errors><RequestID>${escapeXml(requestId)}</RequestID></Response>`
  );
}
