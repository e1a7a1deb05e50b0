// bin/vpcnet: the CNI plugin, exec'd by the container runtime once per pod operation.
import { main } from '../plugin/main.ts';

void main();
