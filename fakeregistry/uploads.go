package fakeregistry

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// uploadSessions are the blob uploads in progress. Each is tied to the repository it was started
// in: go-containerregistry's registry keys sessions by id alone, so an upload begun in one
// repository could be committed through another's URL, which no real registry allows.
type uploadSessions struct {
	mu   sync.Mutex
	byID map[string]*uploadSession
}

// uploadSession is one upload: its repository and the bytes received so far.
type uploadSession struct {
	repository string
	data       []byte
}

var (
	// errUploadUnknown is returned for a session id not open in the repository.
	errUploadUnknown = errors.New("upload not in progress")
	// errUploadOffset is returned for a chunk that does not start where the upload ends.
	errUploadOffset = errors.New("chunk out of order")
)

// newUploadSessions returns an empty session table.
func newUploadSessions() *uploadSessions {
	return &uploadSessions{byID: map[string]*uploadSession{}}
}

// start opens a session in repo and returns its id.
func (u *uploadSessions) start(repo string) string {
	id := rand.Text()
	u.mu.Lock()
	defer u.mu.Unlock()
	u.byID[id] = &uploadSession{repository: repo}
	return id
}

// size returns how many bytes the session id of repo holds; ok is false for an id unknown in repo.
func (u *uploadSessions) size(repo, id string) (n int, ok bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	s := u.lookup(repo, id)
	if s == nil {
		return 0, false
	}
	return len(s.data), true
}

// appendAt appends chunk to the session when it starts at offset (offset < 0: wherever the session
// ends) and returns the new size; errUploadUnknown or errUploadOffset say why it did not.
func (u *uploadSessions) appendAt(repo, id string, offset int, chunk []byte) (int, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	s := u.lookup(repo, id)
	if s == nil {
		return 0, errUploadUnknown
	}
	if offset >= 0 && offset != len(s.data) {
		return len(s.data), fmt.Errorf("%w: chunk starts at %d, upload has %d bytes", errUploadOffset, offset, len(s.data))
	}
	s.data = append(s.data, chunk...)
	return len(s.data), nil
}

// finish removes the session and returns its bytes with last appended; ok is false for an id
// unknown in repo. The session ends whatever the caller then finds, as in go-containerregistry.
func (u *uploadSessions) finish(repo, id string, last []byte) (data []byte, ok bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	s := u.lookup(repo, id)
	if s == nil {
		return nil, false
	}
	delete(u.byID, id)
	return append(s.data, last...), true
}

// lookup returns the session id if it belongs to repo; callers hold mu.
func (u *uploadSessions) lookup(repo, id string) *uploadSession {
	s := u.byID[id]
	if s == nil || s.repository != repo {
		return nil
	}
	return s
}

// uploadLocation is the URL of session id in repo.
func uploadLocation(repo, id string) string {
	return "/v2/" + repo + "/blobs/uploads/" + id
}

// uploadRange is the Range header value for an upload holding n bytes; an empty upload says 0-0,
// as distribution and go-containerregistry do.
func uploadRange(n int) string {
	return "0-" + strconv.Itoa(max(n-1, 0))
}

// parseContentRange reads a chunk's Content-Range "<start>-<end>" and returns start, or -1 when the
// header is absent (the chunk goes at the end).
func parseContentRange(v string) (int, error) {
	if v == "" {
		return -1, nil
	}
	var start, end int
	if n, err := fmt.Sscanf(v, "%d-%d", &start, &end); err != nil || n != 2 || start < 0 || end < start {
		return 0, fmt.Errorf("%w: Content-Range %q is not <start>-<end>", errUploadOffset, v)
	}
	return start, nil
}

// serveUpload runs the blob upload protocol: POST starts a session (or uploads monolithically with
// ?digest=, or mounts with ?mount=&from=), GET reports progress, PATCH appends a chunk, PUT commits
// with ?digest=, DELETE cancels. Sessions are reachable only through their own repository's URL.
func (a *api) serveUpload(w http.ResponseWriter, r *http.Request, info requestInfo) {
	if !allowMethods(w, r, http.MethodPost, http.MethodGet, http.MethodPatch, http.MethodPut, http.MethodDelete) {
		return
	}
	if r.Method == http.MethodPost && info.reference != "" {
		writeRegistryError(w, http.StatusNotFound, codeBlobUploadUnknown, "POST starts an upload and takes no upload id")
		return
	}
	if r.Method != http.MethodPost && info.reference == "" {
		writeRegistryError(w, http.StatusNotFound, codeBlobUploadUnknown, r.Method+" needs an upload id")
		return
	}
	switch r.Method {
	case http.MethodPost:
		a.startUpload(w, r, info)
	case http.MethodGet:
		a.uploadStatus(w, info)
	case http.MethodPatch:
		a.patchUpload(w, r, info)
	case http.MethodPut:
		a.commitUpload(w, r, info)
	case http.MethodDelete:
		a.cancelUpload(w, info)
	}
}

// startUpload answers POST: a monolithic upload, a mount, or a new session.
func (a *api) startUpload(w http.ResponseWriter, r *http.Request, info requestInfo) {
	q := r.URL.Query()
	if q.Has("digest") {
		body, ok := readUploadBody(w, r)
		if ok {
			a.storeUploaded(w, info.repository, q.Get("digest"), body)
		}
		return
	}
	if q.Get("mount") != "" && a.mount(w, r, info) {
		return
	}
	id := a.sessions.start(info.repository)
	writeUploadProgress(w, http.StatusAccepted, info.repository, id, 0)
}

// uploadStatus answers GET: 204 with the bytes received so far.
func (a *api) uploadStatus(w http.ResponseWriter, info requestInfo) {
	n, ok := a.sessions.size(info.repository, info.reference)
	if !ok {
		writeUploadUnknown(w, info)
		return
	}
	writeUploadProgress(w, http.StatusNoContent, info.repository, info.reference, n)
}

// patchUpload answers PATCH: appends a chunk that starts where the upload ends.
func (a *api) patchUpload(w http.ResponseWriter, r *http.Request, info requestInfo) {
	offset, err := parseContentRange(r.Header.Get("Content-Range"))
	if err != nil {
		writeRegistryError(w, http.StatusRequestedRangeNotSatisfiable, codeBlobUploadInvalid, err.Error())
		return
	}
	chunk, ok := readUploadBody(w, r)
	if !ok {
		return
	}
	n, err := a.sessions.appendAt(info.repository, info.reference, offset, chunk)
	switch {
	case err == nil:
		writeUploadProgress(w, http.StatusAccepted, info.repository, info.reference, n)
	case errors.Is(err, errUploadUnknown):
		writeUploadUnknown(w, info)
	default:
		w.Header().Set("Location", uploadLocation(info.repository, info.reference))
		w.Header().Set("Range", uploadRange(n))
		writeRegistryError(w, http.StatusRequestedRangeNotSatisfiable, codeBlobUploadInvalid, err.Error())
	}
}

// commitUpload answers PUT: appends the last chunk, checks the digest and stores the blob.
func (a *api) commitUpload(w http.ResponseWriter, r *http.Request, info requestInfo) {
	last, ok := readUploadBody(w, r)
	if !ok {
		return
	}
	data, ok := a.sessions.finish(info.repository, info.reference, last)
	if !ok {
		writeUploadUnknown(w, info)
		return
	}
	a.storeUploaded(w, info.repository, r.URL.Query().Get("digest"), data)
}

// cancelUpload answers DELETE: the session ends and its id is unknown from then on.
func (a *api) cancelUpload(w http.ResponseWriter, info requestInfo) {
	if _, ok := a.sessions.finish(info.repository, info.reference, nil); !ok {
		writeUploadUnknown(w, info)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// storeUploaded stores data as a blob of repo when it has digest want, answering 201.
func (a *api) storeUploaded(w http.ResponseWriter, repo, want string, data []byte) {
	h, err := v1.NewHash(want)
	if err != nil {
		writeRegistryError(w, http.StatusBadRequest, codeDigestInvalid, fmt.Sprintf("invalid digest %q", want))
		return
	}
	if got := digestOf(data); got != h {
		writeRegistryError(w, http.StatusBadRequest, codeDigestInvalid,
			fmt.Sprintf("uploaded content has digest %s, not %s", got, h))
		return
	}
	a.store.putBlob(repo, h, data)
	w.Header().Set("Location", "/v2/"+repo+"/blobs/"+h.String())
	w.Header().Set("Docker-Content-Digest", h.String())
	w.WriteHeader(http.StatusCreated)
}

// readUploadBody reads a request body; on failure it answers and reports false.
func readUploadBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	data, err := io.ReadAll(r.Body)
	if err != nil {
		writeRegistryError(w, http.StatusBadRequest, codeBlobUploadInvalid, fmt.Sprintf("reading upload: %v", err))
		return nil, false
	}
	return data, true
}

// writeUploadProgress answers status with the session's Location, Range and id headers.
func writeUploadProgress(w http.ResponseWriter, status int, repo, id string, n int) {
	h := w.Header()
	h.Set("Location", uploadLocation(repo, id))
	h.Set("Range", uploadRange(n))
	h.Set("Docker-Upload-UUID", id)
	h.Set("Content-Length", "0")
	w.WriteHeader(status)
}

// writeUploadUnknown answers 404 BLOB_UPLOAD_UNKNOWN for a session id not open in the repository.
func writeUploadUnknown(w http.ResponseWriter, info requestInfo) {
	writeRegistryError(w, http.StatusNotFound, codeBlobUploadUnknown,
		fmt.Sprintf("upload %q not in progress in %q", info.reference, info.repository))
}
