// Which branch ENI an ADD is for, from the Kubernetes API (ADD only: DEL never asks it). A pod
// without the annotation gets regular networking, unless it asked for a branch ENI and the
// resource controller has not written the annotation yet: then the runtime tries again later, so
// a pod with its own security groups is never given the node's.
import {
  CNI_ERR_BAD_POD_ENI_ANNOTATION,
  CNI_ERR_INTERNAL,
  CNI_ERR_TRY_AGAIN_LATER,
  CniError,
} from '../../cni/errors.ts';
import { errorText } from '../../infra/error-text.ts';
import {
  type BranchEni,
  POD_ENI_ANNOTATION,
  PodEniAnnotationError,
  parsePodEniAnnotation,
} from '../../pods/pod-eni.ts';
import type { PodMetadata } from '../../pods/watch/pod-source.ts';
import type { AddContext, AttachRequest, TrunkLink } from '../context.ts';

export interface BranchTarget {
  readonly pod: PodMetadata;
  readonly eni: BranchEni;
  readonly trunk: TrunkLink;
}

export async function branchTarget(ctx: AddContext, req: AttachRequest): Promise<BranchTarget | undefined> {
  const { namespace, name, uid } = req.pod;
  if (!ctx.enablePodEni || !namespace || !name) return undefined;
  const which = `pod ${namespace}/${name}`;
  let pod: PodMetadata | undefined;
  try {
    pod = await ctx.pods.lookup(namespace, name, uid);
  } catch (err) {
    throw new CniError(
      CNI_ERR_TRY_AGAIN_LATER,
      `cannot read ${which} from the Kubernetes API (ENABLE_POD_ENI=true needs it)`,
      errorText(err),
    );
  }
  if (!pod) return undefined;
  if (uid && pod.uid !== uid) {
    // The pod was deleted and another of the same name created: its branch ENI is not this sandbox's.
    throw new CniError(
      CNI_ERR_INTERNAL,
      `${which} in the Kubernetes API has UID ${pod.uid}, the sandbox is for UID ${uid}`,
      'the pod this sandbox belongs to no longer exists',
    );
  }
  const annotation = pod.annotations[POD_ENI_ANNOTATION];
  if (annotation === undefined) {
    if (!pod.requestsPodEni) return undefined;
    throw new CniError(
      CNI_ERR_TRY_AGAIN_LATER,
      `${which} asks for a branch ENI and has no ${POD_ENI_ANNOTATION} annotation yet`,
      'the VPC resource controller has not assigned one; refused rather than giving the pod the node’s security groups',
    );
  }
  let eni: BranchEni;
  try {
    eni = parsePodEniAnnotation(annotation);
  } catch (err) {
    if (err instanceof PodEniAnnotationError) {
      throw new CniError(CNI_ERR_BAD_POD_ENI_ANNOTATION, `${which}: ${err.message}`, `field ${err.field}`);
    }
    throw err;
  }
  const trunk = ctx.trunk();
  if (!trunk) {
    throw new CniError(
      CNI_ERR_TRY_AGAIN_LATER,
      `${which} has branch ENI ${eni.eniId}, and no trunk ENI is attached and configured on this node yet`,
    );
  }
  return { pod, eni, trunk };
}
