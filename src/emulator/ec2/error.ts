// The one error type of the emulator: an EC2 error code plus the HTTP status EC2 answers it with.

export class Ec2Error extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly status: number = 400,
  ) {
    super(message);
    this.name = 'Ec2Error';
  }
}

export function notFound(
  kind: 'NetworkInterfaceID' | 'InstanceID' | 'SubnetID' | 'AttachmentID' | 'SubnetCidrReservationID',
  id: string,
) {
  const noun: Record<typeof kind, string> = {
    NetworkInterfaceID: 'network interface ID',
    InstanceID: 'instance ID',
    SubnetID: 'subnet ID',
    AttachmentID: 'attachment ID',
    SubnetCidrReservationID: 'subnet CIDR reservation ID',
  };
  return new Ec2Error(`Invalid${kind}.NotFound`, `The ${noun[kind]} '${id}' does not exist`);
}

export function invalidParameter(message: string): Ec2Error {
  return new Ec2Error('InvalidParameterValue', message);
}

export function missingParameter(name: string): Ec2Error {
  return new Ec2Error('MissingParameter', `The request must contain the parameter ${name}`);
}
