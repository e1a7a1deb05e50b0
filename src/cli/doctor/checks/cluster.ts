// What the node needs of the cluster and EC2 beyond permissions:
//   kubernetes-api   the API answers for this node's name (pod ENIs, custom networking, the dead
//                    pod GC and the startup taint read or patch it)
//   kube-proxy       IPVS mode with pods that have their own security groups: those pods cannot
//                    reach Services (a limitation aws-node documents too)
//   instance-type    EC2 knows the node's type (its ENI and address limits come from it)
//   eni-attachments  the primary ENI, and every ENI vpcnet attached, go with the instance
//                    (DeleteOnTermination), or their addresses stay taken after it is gone
import { CloudError } from '../../../cloud/cloud.ts';
import { errorText } from '../../../infra/error-text.ts';
import { carriesVpcnetMark } from '../../../ipam/enis/eni-ownership.ts';
import { apiStatus } from '../../../pods/kube-client.ts';
import { type DoctorContext, report, skip } from '../context.ts';
import { callPatiently } from './permissions.ts';

export async function checkKubernetesApi(ctx: DoctorContext): Promise<void> {
  const CHECK = 'kubernetes-api';
  const { config, kube } = ctx;
  if (config === undefined || kube === undefined) return skip(ctx, CHECK, 'no Kubernetes API configured');
  try {
    await kube.getNode(config.nodeName);
  } catch (err) {
    const missing = apiStatus(err) === 404;
    const needed = config.enablePodEni || config.eniPlacement.mode === 'custom';
    report(ctx, {
      check: CHECK,
      severity: needed || missing ? 'error' : 'warning',
      subject: missing ? `node ${config.nodeName}` : kube.baseUrl,
      message: missing
        ? `the API has no node named ${config.nodeName}: the agent reads and labels its node by that name`
        : `the Kubernetes API does not answer: ${errorText(err)}`,
      fix: missing
        ? "set MY_NODE_NAME from the pod's spec.nodeName (the DaemonSet's fieldRef), or VPCNET_NODE_NAME to the node's name"
        : 'let the node reach the API (KUBERNETES_SERVICE_HOST, or VPCNET_KUBE_API) and check the service account token',
    });
  }
}

/** kube-proxy's mode from its ConfigMap (EKS's kube-proxy-config, kubeadm's kube-proxy). */
async function kubeProxyMode(ctx: DoctorContext): Promise<{ mode: string; from: string } | undefined> {
  const kube = ctx.kube;
  if (kube === undefined) return undefined;
  for (const [name, key] of [
    ['kube-proxy-config', 'config'],
    ['kube-proxy', 'config.conf'],
  ] as const) {
    const cm = (await kube
      .request('GET', `/api/v1/namespaces/kube-system/configmaps/${name}`)
      .catch(() => undefined)) as { data?: Record<string, string> } | undefined;
    const text = cm?.data?.[key];
    if (text === undefined) continue;
    const mode = /^\s*mode:\s*["']?([A-Za-z]*)["']?\s*$/m.exec(text)?.[1] ?? '';
    return { mode: mode === '' ? 'iptables' : mode, from: `kube-system/${name}` };
  }
  return undefined;
}

export async function checkKubeProxy(ctx: DoctorContext): Promise<void> {
  const CHECK = 'kube-proxy';
  const found = await kubeProxyMode(ctx);
  if (found === undefined)
    return skip(
      ctx,
      CHECK,
      'no kube-proxy ConfigMap readable (kube-proxy-config or kube-proxy in kube-system)',
    );
  if (found.mode !== 'ipvs' || ctx.config?.enablePodEni !== true) return;
  report(ctx, {
    check: CHECK,
    severity: 'warning',
    subject: `ConfigMap ${found.from}`,
    message:
      'kube-proxy runs in IPVS mode and pods with their own security groups are on (ENABLE_POD_ENI): those pods cannot reach Services, as with aws-node',
    fix: 'run kube-proxy in iptables mode (mode: iptables), or give those pods no security groups',
  });
}

export async function checkInstanceType(ctx: DoctorContext): Promise<void> {
  const CHECK = 'instance-type';
  const { cloud, facts } = ctx;
  if (cloud === undefined || facts === undefined) return skip(ctx, CHECK, 'no EC2 or instance');
  try {
    await cloud.aws.instanceTypeLimits(facts.instanceType);
  } catch (err) {
    if (!(err instanceof CloudError) || err.code !== 'InvalidInstanceType')
      return skip(ctx, CHECK, errorText(err));
    report(ctx, {
      check: CHECK,
      severity: 'error',
      subject: facts.instanceType,
      message: `EC2 does not describe instance type ${facts.instanceType}: the agent reads its ENI and address limits from DescribeInstanceTypes and cannot start without them`,
      fix: 'run the node on an instance type EC2 describes in this region (aws ec2 describe-instance-types --instance-types TYPE)',
    });
  }
}

export async function checkEniAttachments(ctx: DoctorContext): Promise<void> {
  const CHECK = 'eni-attachments';
  const { cloud, facts } = ctx;
  if (cloud === undefined || facts === undefined) return skip(ctx, CHECK, 'no EC2 or instance');
  let reply: Awaited<ReturnType<typeof callPatiently>>;
  try {
    reply = await callPatiently(cloud.clients.ec2, 'DescribeNetworkInterfaces', {
      Filter: [{ Name: 'attachment.instance-id', Value: [facts.instanceId] }],
    });
  } catch (err) {
    return skip(ctx, CHECK, `cannot read the node's ENIs: ${errorText(err)}`);
  }
  for (const eni of reply.items('networkInterfaceSet')) {
    const attachment = eni.child('attachment');
    const eniId = eni.string('networkInterfaceId') ?? '?';
    const device = attachment?.int('deviceIndex');
    const tags = Object.fromEntries(
      eni.items('tagSet').map((t) => [t.string('key') ?? '', t.string('value') ?? '']),
    );
    const ours = carriesVpcnetMark({ tags, description: eni.string('description') ?? '' });
    if (attachment?.bool('deleteOnTermination') !== false || (device !== 0 && !ours)) continue;
    const attachmentId = attachment.string('attachmentId') ?? 'ATTACHMENT';
    report(ctx, {
      check: CHECK,
      severity: 'warning',
      subject: eniId,
      message: `${device === 0 ? 'the primary ENI' : 'an ENI vpcnet attached'} (${eniId}) is kept when the instance terminates (DeleteOnTermination false): it and its addresses stay taken in the subnet`,
      fix: `aws ec2 modify-network-interface-attribute --network-interface-id ${eniId} --attachment AttachmentId=${attachmentId},DeleteOnTermination=true`,
    });
  }
}
