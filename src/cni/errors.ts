// CNI error codes and the error object the spec defines. Imported by the plugin binary
// as well as the agent, so this file must stay dependency-free.

/** Codes 1–99 are reserved by the CNI spec. */
export const CNI_ERR_INCOMPATIBLE_VERSION = 1;
export const CNI_ERR_UNSUPPORTED_FIELD = 2;
export const CNI_ERR_CONTAINER_UNKNOWN = 3;
export const CNI_ERR_INVALID_ENV = 4;
export const CNI_ERR_IO = 5;
export const CNI_ERR_DECODE = 6;
export const CNI_ERR_INVALID_NETCONF = 7;
export const CNI_ERR_TRY_AGAIN_LATER = 11;
/** STATUS only: the plugin cannot serve ADDs now. */
export const CNI_ERR_PLUGIN_NOT_AVAILABLE = 50;
/** STATUS only: not available, and existing containers are disrupted. */
export const CNI_ERR_PLUGIN_NOT_AVAILABLE_DISRUPTED = 51;

/** Plugin-specific codes start at 100. */
export const CNI_ERR_INTERNAL = 100;
/** CHECK found the kernel or cloud differs from what the attachment should have. */
export const CNI_ERR_CHECK_DRIFT = 110;
/** vpcnet: the pod's vpc.amazonaws.com/pod-eni annotation is malformed (the message names the field). */
export const CNI_ERR_BAD_POD_ENI_ANNOTATION = 120;
/**
 * vpcnet: the pod's branch ENI claim takes something another pod or the node holds (its VLAN ID,
 * address or ENI, per the Kubernetes API and EC2); the message names the other pod.
 */
export const CNI_ERR_BRANCH_CLAIM_CONFLICT = 121;
/** ADD of an attachment whose interface already exists in the container (CNI 1.0: ADD must fail). */
export const CNI_ERR_ATTACHMENT_EXISTS = 130;

/** The error object printed on stdout when a CNI command fails. */
export interface CniErrorJson {
  readonly cniVersion: string;
  readonly code: number;
  readonly msg: string;
  readonly details?: string;
}

export class CniError extends Error {
  readonly code: number;
  readonly msg: string;
  readonly details: string | undefined;

  constructor(code: number, msg: string, details?: string) {
    super(details === undefined ? msg : `${msg}: ${details}`);
    this.name = 'CniError';
    this.code = code;
    this.msg = msg;
    this.details = details;
  }

  toJson(cniVersion: string): CniErrorJson {
    // exactOptionalPropertyTypes: leave `details` out rather than set it to undefined.
    return this.details === undefined
      ? { cniVersion, code: this.code, msg: this.msg }
      : { cniVersion, code: this.code, msg: this.msg, details: this.details };
  }
}
