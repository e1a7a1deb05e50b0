// Upstream's awscni_* series (aws/amazon-vpc-cni-k8s 1.23: utils/prometheusmetrics and
// pkg/version), each with its Prometheus type and label names, as its agent registers them: what
// a dashboard or alert built for aws-node may ask vpcnet's agent for. docs/metrics.md explains each.
export interface UpstreamSeries {
  readonly name: string;
  readonly type: 'counter' | 'gauge' | 'histogram' | 'summary';
  readonly labels: readonly string[];
}

export const UPSTREAM_SERIES: readonly UpstreamSeries[] = [
  { name: 'awscni_ipamd_error_count', type: 'counter', labels: ['fn'] },
  { name: 'awscni_ipamd_action_inprogress', type: 'gauge', labels: ['fn'] },
  { name: 'awscni_eni_max', type: 'gauge', labels: [] },
  { name: 'awscni_ip_max', type: 'gauge', labels: [] },
  { name: 'awscni_reconcile_count', type: 'counter', labels: ['fn'] },
  { name: 'awscni_add_ip_req_count', type: 'counter', labels: [] },
  { name: 'awscni_del_ip_req_count', type: 'counter', labels: ['reason'] },
  { name: 'awscni_pod_eni_error_count', type: 'counter', labels: ['fn'] },
  { name: 'awscni_aws_api_latency_ms', type: 'summary', labels: ['api', 'error', 'status'] },
  { name: 'awscni_aws_api_error_count', type: 'counter', labels: ['api', 'error'] },
  { name: 'awscni_aws_utils_error_count', type: 'counter', labels: ['fn', 'error'] },
  { name: 'awscni_ec2api_req_count', type: 'counter', labels: ['fn'] },
  { name: 'awscni_ec2api_error_count', type: 'counter', labels: ['fn'] },
  { name: 'awscni_eni_allocated', type: 'gauge', labels: [] },
  { name: 'awscni_total_ip_addresses', type: 'gauge', labels: [] },
  { name: 'awscni_assigned_ip_addresses', type: 'gauge', labels: [] },
  { name: 'awscni_force_removed_enis', type: 'counter', labels: [] },
  { name: 'awscni_force_removed_ips', type: 'counter', labels: [] },
  { name: 'awscni_total_ipv4_prefixes', type: 'gauge', labels: [] },
  { name: 'awscni_assigned_ip_per_cidr', type: 'gauge', labels: ['cidr'] },
  { name: 'awscni_no_available_ip_addresses', type: 'counter', labels: [] },
  { name: 'awscni_assigned_ip_per_eni', type: 'gauge', labels: ['eni'] },
  {
    name: 'awscni_ipamd_startup_duration_seconds',
    type: 'histogram',
    labels: ['success', 'with_api_server', 'failure_reason'],
  },
  { name: 'awscni_ipamd_node_initialization_duration_seconds', type: 'histogram', labels: ['success'] },
  { name: 'awscni_build_info', type: 'gauge', labels: ['version', 'goversion'] },
];
