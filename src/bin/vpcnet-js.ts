// bin/vpcnet-js: the TypeScript CNI forwarder. bin/vpcnet (the C forwarder in src/plugin/native/)
// is what runtimes exec; this one is its executable specification (src/plugin/native-*.test.ts).
import { main } from '../plugin/main.ts';

void main();
