// imds: which instance this node is, from IMDSv2 as the agent reads it; when IMDS gives no answer
// the agent cannot start (it reads its instance, ENIs and region there), and the finding says why
// as far as EC2 tells it (the instance's metadata options: endpoint off, hop limit 1). The node's
// facts the other checks use come from here, else from the agent's state and EC2.
import type { InstanceMetadata } from '../../../cloud/cloud.ts';
import type { XmlElement } from '../../../cloud/ec2-query/xml-reader.ts';
import { readInstanceMetadata } from '../../../cloud/instance-metadata.ts';
import { errorText } from '../../../infra/error-text.ts';
import { getJson } from '../../../infra/unix-socket-json.ts';
import { type DoctorCloud, type DoctorContext, report } from '../context.ts';
import type { NodeFacts } from '../ec2-actions.ts';
import { callPatiently } from './permissions.ts';

const CHECK = 'imds';
/** What the dry runs name when the node's primary ENI cannot be read. */
const PLACEHOLDER_ENI = 'eni-00000000000000000';

/** The primary ENI and its attachment, from EC2 (the dry runs name them). */
async function primaryEni(cloud: DoctorCloud | undefined, instanceId: string) {
  const enis = await cloud?.aws.describeInstanceEnis(instanceId).catch(() => []);
  const primary = enis?.find((e) => e.deviceNumber === 0);
  return {
    primaryEniId: primary?.eniId ?? PLACEHOLDER_ENI,
    primaryAttachmentId: primary?.attachmentId ?? 'eni-attach-00000000000000000',
  };
}

async function factsFromMetadata(m: InstanceMetadata, cloud: DoctorCloud | undefined): Promise<NodeFacts> {
  return {
    instanceId: m.instanceId,
    instanceType: m.instanceType,
    subnetId: m.subnetId,
    vpcId: m.vpcId,
    availabilityZone: m.availabilityZone,
    securityGroupIds: m.securityGroupIds,
    ...(await primaryEni(cloud, m.instanceId)),
  };
}

/** The instance as EC2 describes it, by the ID the agent's state names. */
async function describeInstance(cloud: DoctorCloud, instanceId: string): Promise<XmlElement | undefined> {
  const reply = await callPatiently(cloud.clients.ec2, 'DescribeInstances', { InstanceId: [instanceId] });
  return reply.items('reservationSet')[0]?.items('instancesSet')[0];
}

async function agentInstanceId(agentSocket: string | undefined): Promise<string | undefined> {
  if (agentSocket === undefined) return undefined;
  try {
    const { status, body } = await getJson(agentSocket, '/v1/state', 3000);
    const id = (body as { instanceId?: unknown }).instanceId;
    return status === 200 && typeof id === 'string' ? id : undefined;
  } catch {
    return undefined;
  }
}

function imdsFix(instance: XmlElement | undefined, instanceId: string | undefined): string {
  const options = instance?.child('metadataOptions');
  const id = instanceId ?? 'INSTANCE';
  if (options?.string('httpEndpoint') === 'disabled')
    return `turn the instance's metadata endpoint on: aws ec2 modify-instance-metadata-options --instance-id ${id} --http-endpoint enabled`;
  if (options?.int('httpPutResponseHopLimit') === 1)
    return `raise the token hop limit for containers: aws ec2 modify-instance-metadata-options --instance-id ${id} --http-put-response-hop-limit 2`;
  return 'let the node reach 169.254.169.254 (the agent runs with the host network; no firewall rule may drop it)';
}

/**
 * The node's facts, and the imds finding when IMDS does not answer. `agentSocket`: where the
 * running agent says which instance this is when IMDS cannot.
 */
export async function nodeIdentity(
  ctx: DoctorContext,
  agentSocket: string | undefined,
): Promise<NodeFacts | undefined> {
  let metadata: InstanceMetadata;
  try {
    metadata = await readInstanceMetadata(ctx.imds);
    return await factsFromMetadata(metadata, ctx.cloud);
  } catch (err) {
    const instanceId = await agentInstanceId(agentSocket);
    const instance =
      instanceId === undefined || ctx.cloud === undefined
        ? undefined
        : await describeInstance(ctx.cloud, instanceId).catch(() => undefined);
    const state = instance?.child('metadataOptions');
    const why =
      state === undefined
        ? ''
        : ` (EC2: endpoint ${state.string('httpEndpoint') ?? '?'}, tokens ${state.string('httpTokens') ?? '?'}, hop limit ${state.string('httpPutResponseHopLimit') ?? '?'})`;
    report(ctx, {
      check: CHECK,
      severity: 'error',
      subject: ctx.imds.endpoint.origin,
      message: `IMDSv2 does not answer this node, so the agent cannot start: ${errorText(err)}${why}`,
      fix: imdsFix(instance, instanceId),
    });
    if (instance === undefined || instanceId === undefined) return undefined;
    const groups = instance.items('groupSet').map((g) => g.string('groupId') ?? '');
    return {
      instanceId,
      instanceType: instance.string('instanceType') ?? '?',
      subnetId: instance.string('subnetId') ?? '?',
      vpcId: instance.string('vpcId') ?? '?',
      availabilityZone: instance.child('placement')?.string('availabilityZone') ?? '?',
      securityGroupIds: groups,
      ...(await primaryEni(ctx.cloud, instanceId)),
    };
  }
}
