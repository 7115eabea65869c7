package fakeregistry

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
)

// uploadSessions are the blob uploads in progress. Each is tied to the repository it was started
// in: go-containerregistry's registry keys sessions by id alone, so an upload begun in one
// repository could be committed through another's URL, which no real registry allows.
type uploadSessions struct {
	mu   sync.Mutex
	byID map[string]*uploadSession
}

// uploadSession is one upload: its repository, the digest algorithm the client announced with
// digest-algorithm (empty when it did not) and the bytes received so far.
type uploadSession struct {
	repository string
	algorithm  string
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

// start opens a session in repo for a blob of digest algorithm (empty: any) and returns its id.
func (u *uploadSessions) start(repo, algorithm string) string {
	id := rand.Text()
	u.mu.Lock()
	defer u.mu.Unlock()
	u.byID[id] = &uploadSession{repository: repo, algorithm: algorithm}
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
	if err := checkOffset(s, offset); err != nil {
		return len(s.data), err
	}
	s.data = append(s.data, chunk...)
	return len(s.data), nil
}

// finish removes the session and returns it with last appended at offset (offset < 0: wherever
// the session ends). errUploadUnknown says the id is unknown in repo; errUploadOffset that last
// does not start where the upload ends, and then the session stays open with its size in n, as
// the distribution spec asks of an out-of-order final chunk. Otherwise the session ends whatever
// the caller then finds (a digest mismatch ends it, as in go-containerregistry).
func (u *uploadSessions) finish(repo, id string, offset int, last []byte) (done uploadSession, n int, err error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	s := u.lookup(repo, id)
	if s == nil {
		return uploadSession{}, 0, errUploadUnknown
	}
	if err := checkOffset(s, offset); err != nil {
		return uploadSession{}, len(s.data), err
	}
	delete(u.byID, id)
	done = *s
	done.data = append(done.data, last...)
	return done, len(done.data), nil
}

// checkOffset reports errUploadOffset unless a chunk at offset (< 0: at the end) continues s.
func checkOffset(s *uploadSession, offset int) error {
	if offset >= 0 && offset != len(s.data) {
		return fmt.Errorf("%w: chunk starts at %d, upload has %d bytes", errUploadOffset, offset, len(s.data))
	}
	return nil
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

// startUpload answers POST: a monolithic upload, a mount, or a new session, for a blob of the
// digest-algorithm the client names (any supported one when it names none).
func (a *api) startUpload(w http.ResponseWriter, r *http.Request, info requestInfo) {
	q := r.URL.Query()
	var algorithm string
	if q.Has("digest-algorithm") {
		var err error
		if algorithm, err = parseAlgorithm(q.Get("digest-algorithm")); err != nil {
			writeRegistryError(w, http.StatusBadRequest, codeDigestInvalid, "digest-algorithm: "+err.Error())
			return
		}
	}
	if q.Has("digest") {
		body, ok := readUploadBody(w, r)
		if ok {
			a.storeUploaded(w, info.repository, q.Get("digest"), algorithm, body)
		}
		return
	}
	if q.Get("mount") != "" && a.mount(w, r, info) {
		return
	}
	id := a.sessions.start(info.repository, algorithm)
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
	offset, chunk, ok := a.readChunk(w, r, info)
	if !ok {
		return
	}
	n, err := a.sessions.appendAt(info.repository, info.reference, offset, chunk)
	if err != nil {
		writeChunkRefused(w, info, n, err)
		return
	}
	writeUploadProgress(w, http.StatusAccepted, info.repository, info.reference, n)
}

// commitUpload answers PUT: appends the last chunk when it starts where the upload ends (416 and
// the session kept otherwise), checks the digest and stores the blob.
func (a *api) commitUpload(w http.ResponseWriter, r *http.Request, info requestInfo) {
	offset, last, ok := a.readChunk(w, r, info)
	if !ok {
		return
	}
	done, n, err := a.sessions.finish(info.repository, info.reference, offset, last)
	if err != nil {
		writeChunkRefused(w, info, n, err)
		return
	}
	a.storeUploaded(w, info.repository, r.URL.Query().Get("digest"), done.algorithm, done.data)
}

// readChunk reads a chunk's Content-Range start (-1 without the header) and body; on failure it
// answers (416 with the session's Range for a malformed Content-Range) and reports false.
func (a *api) readChunk(w http.ResponseWriter, r *http.Request, info requestInfo) (offset int, chunk []byte, ok bool) {
	offset, err := parseContentRange(r.Header.Get("Content-Range"))
	if err != nil {
		n, open := a.sessions.size(info.repository, info.reference)
		if !open {
			err = errUploadUnknown
		}
		writeChunkRefused(w, info, n, err)
		return 0, nil, false
	}
	chunk, ok = readUploadBody(w, r)
	return offset, chunk, ok
}

// writeChunkRefused answers a chunk the session did not take: 404 for an unknown session, else 416
// BLOB_UPLOAD_INVALID with the session's Location and its current Range (n bytes), from which the
// client resumes.
func writeChunkRefused(w http.ResponseWriter, info requestInfo, n int, err error) {
	if errors.Is(err, errUploadUnknown) {
		writeUploadUnknown(w, info)
		return
	}
	w.Header().Set("Location", uploadLocation(info.repository, info.reference))
	w.Header().Set("Range", uploadRange(n))
	writeRegistryError(w, http.StatusRequestedRangeNotSatisfiable, codeBlobUploadInvalid, err.Error())
}

// cancelUpload answers DELETE: the session ends and its id is unknown from then on.
func (a *api) cancelUpload(w http.ResponseWriter, info requestInfo) {
	if _, _, err := a.sessions.finish(info.repository, info.reference, -1, nil); err != nil {
		writeUploadUnknown(w, info)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// storeUploaded stores data as a blob of repo when it has digest want, computed with want's own
// algorithm, answering 201. algorithm is the upload's digest-algorithm, empty when the client
// named none; a digest of another algorithm is refused, as a registry hashing the stream with the
// announced algorithm could not verify it.
func (a *api) storeUploaded(w http.ResponseWriter, repo, want, algorithm string, data []byte) {
	h, err := parseDigest(want)
	if err == nil && algorithm != "" && h.Algorithm != algorithm {
		err = fmt.Errorf("the upload announced digest-algorithm=%s, but %s is a %s digest", algorithm, h, h.Algorithm)
	}
	if err == nil {
		err = verifyDigest(h, data)
	}
	if err != nil {
		writeRegistryError(w, http.StatusBadRequest, codeDigestInvalid, "blob upload: "+err.Error())
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
