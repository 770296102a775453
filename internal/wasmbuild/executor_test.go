package wasmbuild_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/internal/wasmbuild"
)

// An edge executor leaves net/http's HTTP/2 out, and keeps the tags of the
// user's GOFLAGS, which the command line's -tags would replace.
func TestEdgeTagsOmitHTTP2AndKeepTheUsersTags(t *testing.T) {
	require.Equal(t, "-tags=nethttpomithttp2", wasmbuild.EdgeTags(""))
	require.Equal(t, "-tags=nethttpomithttp2", wasmbuild.EdgeTags("-mod=mod -trimpath"))
	require.Equal(t, "-tags=nethttpomithttp2,a,b", wasmbuild.EdgeTags("-mod=mod -tags=a,b"))
	require.Equal(t, "-tags=nethttpomithttp2,b", wasmbuild.EdgeTags("--tags=a -tags=b"), "the last -tags, as go reads them")
}
