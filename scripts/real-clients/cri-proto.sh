#!/usr/bin/env bash
# Writes the CRI runtime.v1 API definition (what the kubelet speaks to a container runtime) as a
# .proto file that @grpc/proto-loader can load. The file comes from the copy of k8s.io/cri-api
# vendored in Debian's containerd source package; its gogoproto import and file options are
# dropped, because they only steer Go code generation and their import is not shipped.
#   usage: scripts/real-clients/cri-proto.sh OUT_DIR    -> OUT_DIR/cri-api.proto
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:?usage: $0 OUT_DIR}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$here/debian-source.sh" containerd "$work/src"
proto=$(find "$work/src" -path '*/k8s.io/cri-api/pkg/apis/runtime/v1/api.proto' | head -n 1)
if [ -z "$proto" ]; then
  echo "cri-proto: containerd's sources carry no vendored k8s.io/cri-api runtime/v1/api.proto" >&2
  exit 1
fi
grep -v -e '^import "github.com/gogo/protobuf/gogoproto/gogo.proto";' -e '^option (gogoproto\.' \
  "$proto" >"$work/cri-api.proto"
# Any gogoproto reference left (a field option, say) would make the loader fail later and obscurely.
if grep -n gogoproto "$work/cri-api.proto" >&2; then
  echo "cri-proto: $proto still refers to gogoproto after stripping (lines above)" >&2
  exit 1
fi
mkdir -p "$out"
mv "$work/cri-api.proto" "$out/cri-api.proto"
echo "$out/cri-api.proto"
