// An ENI's connection-tracking timeouts on the EC2 wire: read from a NetworkInterface's
// `connectionTrackingConfiguration` (DescribeNetworkInterfaces), written as
// CreateNetworkInterface's `ConnectionTrackingSpecification.*` parameters. New ENIs copy the
// primary ENI's, as upstream does since 1.23: a node whose launch template shortened the timeouts
// keeps them on every ENI its pods use.
import type { ConnectionTracking } from '../cloud.ts';
import type { QueryStruct } from '../ec2-query/query-form.ts';
import type { XmlElement } from '../ec2-query/xml-reader.ts';

/** The timeouts a NetworkInterface `<item>` lists; undefined when it lists none (EC2's defaults). */
export function readConnectionTracking(eni: XmlElement): ConnectionTracking | undefined {
  const xml = eni.child('connectionTrackingConfiguration');
  if (xml === undefined) return undefined;
  const timeouts: ConnectionTracking = withoutUnset({
    tcpEstablishedTimeout: xml.int('tcpEstablishedTimeout'),
    udpStreamTimeout: xml.int('udpStreamTimeout'),
    udpTimeout: xml.int('udpTimeout'),
  });
  return Object.keys(timeouts).length === 0 ? undefined : timeouts;
}

/** CreateNetworkInterface's ConnectionTrackingSpecification: only the timeouts given, or nothing. */
export function connectionTrackingParams(timeouts: ConnectionTracking | undefined): QueryStruct | undefined {
  if (timeouts === undefined || Object.keys(withoutUnset(timeouts)).length === 0) return undefined;
  return {
    TcpEstablishedTimeout: timeouts.tcpEstablishedTimeout,
    UdpStreamTimeout: timeouts.udpStreamTimeout,
    UdpTimeout: timeouts.udpTimeout,
  };
}

function withoutUnset(t: { [K in keyof ConnectionTracking]: number | undefined }): ConnectionTracking {
  return Object.fromEntries(Object.entries(t).filter(([, v]) => v !== undefined)) as ConnectionTracking;
}
