// The AWS driver pointed at an emulator (EC2 and IMDS on the same URL, credentials it accepts).
import type { AwsCloud } from '../aws/aws.ts';
import { createAwsCloud } from '../aws/create-aws-cloud.ts';

export function awsCloudOn(url: string, region = 'us-west-2'): Promise<AwsCloud> {
  return createAwsCloud({
    region,
    ec2Endpoint: url,
    imds: { endpoint: url },
    credentials: { accessKeyId: 'AKIDEMULATOR', secretAccessKey: 'emulator' },
  });
}
