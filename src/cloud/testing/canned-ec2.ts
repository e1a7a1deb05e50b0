// An Ec2Api that answers from canned XML documents, for what the emulator never sends (an ENI
// without InterfaceType, a malformed address) or to count pages. `answer` gets the action and
// its parameters and returns the reply's XML body.
import type { Ec2Api } from '../ec2-query/ec2-query-client.ts';
import type { QueryStruct } from '../ec2-query/query-form.ts';
import { parseXml, type XmlElement } from '../ec2-query/xml-reader.ts';

export class CannedEc2 implements Ec2Api {
  readonly calls: { action: string; params: QueryStruct }[] = [];
  constructor(private readonly answer: (action: string, params: QueryStruct) => string) {}

  call(action: string, params: QueryStruct): Promise<XmlElement> {
    this.calls.push({ action, params });
    try {
      return Promise.resolve(parseXml(this.answer(action, params)));
    } catch (err) {
      return Promise.reject(err);
    }
  }

  close(): void {}
}

/** A reply document as EC2 writes it: `<ActionResponse xmlns=…><requestId>…</requestId>body</ActionResponse>`. */
export function ec2Reply(action: string, body: string): string {
  return (
    `<?xml version="1.0" encoding="UTF-8"?>\n<${action}Response xmlns="http://ec2.amazonaws.com/doc/2016-11-15/">` +
    `<requestId>00000000-0000-4000-8000-000000000000</requestId>${body}</${action}Response>`
  );
}
