// subnets and eni-config: where this node's new ENIs can go. With subnet discovery, the subnets of
// the node's zone as their tags decide (ipam/enis/subnet-tags.ts, the agent's own rules): none
// usable is an error; the node's own subnet excluded, or a usable subnet without a free address,
// a warning. With custom networking, the node's ENIConfig must exist, and its subnet and security
// groups too, in the node's VPC and zone (an ENI attaches only in its instance's zone).
import type { SubnetInfo } from '../../../cloud/cloud.ts';
import { AwsServiceError } from '../../../cloud/ec2-query/service-error.ts';
import { errorText } from '../../../infra/error-text.ts';
import { drainReason, verdictForNewEnis } from '../../../ipam/enis/subnet-tags.ts';
import { EniConfigError, KubeEniConfigs } from '../../../pods/eni-config.ts';
import { type DoctorContext, report, skip } from '../context.ts';
import { callPatiently } from './permissions.ts';

export async function checkSubnets(ctx: DoctorContext): Promise<void> {
  const CHECK = 'subnets';
  const { config, cloud, facts } = ctx;
  if (config === undefined || cloud === undefined || facts === undefined)
    return skip(ctx, CHECK, 'no configuration, EC2 or instance');
  if (!config.cloudAccess.provisioning || config.cloudAccess.imdsOnly)
    return skip(
      ctx,
      CHECK,
      'the agent creates no ENI (DISABLE_NETWORK_RESOURCE_PROVISIONING or IMDS-only mode)',
    );
  const mode = config.eniPlacement.mode;
  if (mode === 'custom') return skip(ctx, CHECK, 'custom networking places ENIs (see eni-config)');
  const query =
    mode === 'discovery'
      ? { availabilityZone: facts.availabilityZone, vpcId: facts.vpcId }
      : { subnetIds: [facts.subnetId] };
  let subnets: SubnetInfo[];
  try {
    subnets = await cloud.aws.describeSubnets(query);
  } catch (err) {
    return skip(ctx, CHECK, `cannot read the subnets: ${errorText(err)}`);
  }
  const tagCtx = { primarySubnetId: facts.subnetId, clusterName: config.eniTags.clusterName };
  const usable = mode === 'discovery' ? subnets.filter((s) => verdictForNewEnis(s, tagCtx).usable) : subnets;
  const own = subnets.find((s) => s.subnetId === facts.subnetId);
  const ownDrains = mode === 'discovery' && own !== undefined ? drainReason(own, tagCtx) : undefined;
  if (ownDrains !== undefined) {
    report(ctx, {
      check: CHECK,
      severity: 'warning',
      subject: facts.subnetId,
      message: `the node's own subnet is ${ownDrains}: its ENIs drain and lend no new address`,
      fix: `if that is not meant, remove the tag: aws ec2 delete-tags --resources ${facts.subnetId} --tags Key=kubernetes.io/role/cni`,
    });
  }
  if (usable.length === 0) {
    report(ctx, {
      check: CHECK,
      severity: 'error',
      subject: facts.availabilityZone,
      message: `no subnet of zone ${facts.availabilityZone} may take a new ENI (${subnets.map((s) => `${s.subnetId}: ${verdictForNewEnis(s, tagCtx).usable ? 'usable' : (verdictForNewEnis(s, tagCtx) as { why: string }).why}`).join('; ')}): the pool cannot grow past the ENIs it has`,
      fix: `tag a subnet of ${facts.availabilityZone} for pods: aws ec2 create-tags --resources SUBNET --tags Key=kubernetes.io/role/cni,Value=1`,
    });
  }
  for (const s of usable.filter((x) => x.availableIpCount === 0)) {
    report(ctx, {
      check: CHECK,
      severity: 'warning',
      subject: s.subnetId,
      message: `subnet ${s.subnetId} (${s.cidr}) has no free address: a new ENI or address there fails`,
      fix: 'add a subnet for pods (tagged kubernetes.io/role/cni=1), or free addresses in this one',
    });
  }
}

export async function checkEniConfig(ctx: DoctorContext): Promise<void> {
  const CHECK = 'eni-config';
  const { config, cloud, facts, kube } = ctx;
  if (config === undefined || config.eniPlacement.mode !== 'custom')
    return skip(ctx, CHECK, 'custom networking is off');
  if (kube === undefined || cloud === undefined || facts === undefined)
    return skip(ctx, CHECK, 'no Kubernetes API, EC2 or instance');
  let eniConfig: Awaited<ReturnType<KubeEniConfigs['current']>>;
  try {
    eniConfig = await new KubeEniConfigs(kube, config.nodeName, config.eniPlacement).current();
  } catch (err) {
    if (!(err instanceof EniConfigError)) throw err;
    report(ctx, {
      check: CHECK,
      severity: 'error',
      subject: `node ${config.nodeName}`,
      message: `${err.message}: the agent creates no ENI without it (AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG=true)`,
      fix: 'create the ENIConfig the node names (spec.subnet, spec.securityGroups), or fix the node label or annotation that names it',
    });
    return;
  }
  const subject = `ENIConfig ${eniConfig.name}`;
  let subnet: SubnetInfo | undefined;
  try {
    [subnet] = await cloud.aws.describeSubnets({ subnetIds: [eniConfig.subnetId] });
  } catch (err) {
    report(ctx, {
      check: CHECK,
      severity: 'error',
      subject,
      message: `its subnet ${eniConfig.subnetId} cannot be read: ${errorText(err)}`,
      fix: `set spec.subnet of ENIConfig ${eniConfig.name} to a subnet of ${facts.vpcId} in ${facts.availabilityZone}`,
    });
  }
  if (subnet !== undefined && subnet.vpcId !== facts.vpcId) {
    report(ctx, {
      check: CHECK,
      severity: 'error',
      subject,
      message: `its subnet ${subnet.subnetId} is in ${subnet.vpcId}, not the node's VPC ${facts.vpcId}`,
      fix: `set spec.subnet of ENIConfig ${eniConfig.name} to a subnet of ${facts.vpcId}`,
    });
  } else if (subnet !== undefined && subnet.availabilityZone !== facts.availabilityZone) {
    report(ctx, {
      check: CHECK,
      severity: 'error',
      subject,
      message: `its subnet ${subnet.subnetId} is in zone ${subnet.availabilityZone}, the node in ${facts.availabilityZone}: an ENI attaches only in its instance's zone`,
      fix: `name one ENIConfig per zone (ENI_CONFIG_LABEL_DEF=topology.kubernetes.io/zone) with a subnet of ${facts.availabilityZone}`,
    });
  }
  if (eniConfig.securityGroupIds.length === 0) return;
  try {
    await callPatiently(cloud.clients.ec2, 'DescribeSecurityGroups', {
      GroupId: [...eniConfig.securityGroupIds],
    });
  } catch (err) {
    const missing = err instanceof AwsServiceError && err.code === 'InvalidGroup.NotFound';
    report(ctx, {
      check: CHECK,
      severity: missing ? 'error' : 'warning',
      subject,
      message: missing
        ? `a security group it names does not exist: ${err.message}`
        : `its security groups ${eniConfig.securityGroupIds.join(', ')} cannot be read: ${errorText(err)}`,
      fix: `set spec.securityGroups of ENIConfig ${eniConfig.name} to groups of ${facts.vpcId}`,
    });
  }
}
