// Node objects of the Kubernetes slice: one per launched instance that has a node name, created
// when the instance is launched (as a kubelet registers its node) and deleted when it is
// terminated. Labels and annotations then change only through PATCH, as in a cluster.
import type { InstanceEvent, VpcOperations } from '../vpc/operations.ts';
import type { Instance, VpcView } from '../vpc/view.ts';
import type { ObjectStore } from './object-store.ts';
import type { JsonObject } from './objects.ts';

export function nodeObject(view: VpcView, instance: Instance & { readonly nodeName: string }): JsonObject {
  const primary = view.enisOf(instance.instanceId).find((e) => e.attachment?.deviceIndex === 0);
  const az = view.subnet(instance.subnetId).spec.availabilityZone;
  return {
    kind: 'Node',
    apiVersion: 'v1',
    metadata: {
      name: instance.nodeName,
      uid: `node-${instance.instanceId}`,
      labels: {
        'kubernetes.io/hostname': instance.nodeName,
        'kubernetes.io/os': 'linux',
        'node.kubernetes.io/instance-type': instance.instanceType,
        'topology.kubernetes.io/region': view.spec.region,
        'topology.kubernetes.io/zone': az,
      },
      annotations: {},
    },
    spec: { providerID: `aws:///${az}/${instance.instanceId}` },
    status: {
      addresses: primary === undefined ? [] : [{ type: 'InternalIP', address: primary.primaryIp }],
      conditions: [{ type: 'Ready', status: 'True' }],
      // kubelet reports its maxPods here; EKS's AMI sets it by upstream's formula for the type.
      capacity: { pods: String(eksMaxPods(instance)) },
      allocatable: { pods: String(eksMaxPods(instance)) },
    },
  };
}

/** Upstream's max pods in secondary-IP mode: ENIs × (addresses per ENI − 1) + 2. */
function eksMaxPods(instance: Instance): number {
  return instance.limits.maxEnis * (instance.limits.ipsPerEni - 1) + 2;
}

/** Keeps `nodes` in step with the instances `ops` launches and terminates. */
export function registerNodesOfInstances(ops: VpcOperations, nodes: ObjectStore): void {
  ops.instanceListeners.add((e: InstanceEvent) => {
    const { instance } = e;
    const nodeName = instance.nodeName;
    if (nodeName === undefined) return;
    const existing = nodes.find(undefined, nodeName);
    if (e.type === 'launched') {
      const node = nodeObject(ops.state, { ...instance, nodeName });
      // A node name launched again re-registers the node, as a replaced kubelet would.
      if (existing === undefined) nodes.create(undefined, node);
      else nodes.replace(undefined, nodeName, node);
    } else if (existing !== undefined) nodes.delete(undefined, nodeName);
  });
}
