package fakeregistry

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path"
	"slices"
	"strings"
	"time"
)

// AuthMode selects how the registry authenticates clients.
type AuthMode string

const (
	// AuthNone lets every client pull every repository.
	AuthNone AuthMode = ""
	// AuthBasic checks HTTP basic credentials on every request.
	AuthBasic AuthMode = "basic"
	// AuthBearer issues tokens at /token (Docker token spec) and checks them on every request.
	AuthBearer AuthMode = "bearer"
)

// Default values of Auth fields.
const (
	// DefaultService is the bearer service name when Auth.Service is empty.
	DefaultService = "fakeregistry"
	// DefaultTokenTTL is the token lifetime when Auth.TokenTTL is zero.
	DefaultTokenTTL = 5 * time.Minute
)

// Auth configures authentication and per-repository pull access.
//
// Repository patterns are path.Match globs ("team/*" matches team/app, not team/app/api), plus "**"
// for every repository and "prefix/**" for every repository below prefix.
//
// Outcomes: missing credentials for a repository that anonymous users may not pull, and wrong
// credentials, are 401 with a WWW-Authenticate challenge. With basic auth, valid credentials for a
// repository outside the user's patterns are 403 DENIED. With bearer auth the token endpoint grants
// only allowed repositories (like Docker's token server) and the registry answers a token without the
// needed scope with 401 and error="insufficient_scope", as Docker Hub and distribution do; clients
// such as containers/image then fetch one more token and retry once. /v2/ needs valid credentials
// (basic) or a valid token (bearer), so clients discover the challenge there.
type Auth struct {
	// Mode is none (zero value), basic or bearer.
	Mode AuthMode `json:"mode,omitempty"`
	// Users maps user names to their passwords and repository patterns.
	Users map[string]User `json:"users,omitempty"`
	// Anonymous are repository patterns anyone may pull without credentials.
	Anonymous []string `json:"anonymous,omitempty"`
	// Service is the bearer service name; default DefaultService.
	Service string `json:"service,omitempty"`
	// TokenTTL is the lifetime of issued tokens; default DefaultTokenTTL.
	TokenTTL time.Duration `json:"-"`
}

// User is one account and the repositories it may pull and push.
type User struct {
	// Password is the user's password.
	Password string `json:"password"`
	// Repositories are the patterns of repositories the user may pull.
	Repositories []string `json:"repositories,omitempty"`
	// Push are the patterns of repositories the user may push to (a writable registry only); pushing
	// also needs pull access, as docker and containers/image check blobs before uploading them.
	Push []string `json:"push,omitempty"`
}

// authenticator enforces an Auth configuration and serves the token endpoint.
type authenticator struct {
	cfg Auth
	// key signs tokens; random per registry.
	key []byte
}

// newAuthenticator validates cfg, applies defaults and creates the token signing key.
func newAuthenticator(cfg Auth) (*authenticator, error) {
	switch cfg.Mode {
	case AuthNone, AuthBasic, AuthBearer:
	default:
		return nil, fmt.Errorf("auth mode %q: want none, basic or bearer", cfg.Mode)
	}
	patterns := slices.Clone(cfg.Anonymous)
	for name, u := range cfg.Users {
		if name == "" || strings.Contains(name, ":") {
			return nil, fmt.Errorf("auth user %q: name must be non-empty and contain no colon", name)
		}
		patterns = append(patterns, u.Repositories...)
		patterns = append(patterns, u.Push...)
	}
	for _, p := range patterns {
		if !validPattern(p) {
			return nil, fmt.Errorf("auth repository pattern %q is malformed", p)
		}
	}
	if cfg.Service == "" {
		cfg.Service = DefaultService
	}
	if cfg.TokenTTL <= 0 {
		cfg.TokenTTL = DefaultTokenTTL
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("creating token key: %w", err)
	}
	return &authenticator{cfg: cfg, key: key}, nil
}

// matchRepository reports whether repo matches a repository pattern (see Auth).
func matchRepository(pattern, repo string) bool {
	if pattern == "**" {
		return true
	}
	if prefix, ok := strings.CutSuffix(pattern, "/**"); ok {
		return strings.HasPrefix(repo, prefix+"/")
	}
	ok, err := path.Match(pattern, repo)
	return err == nil && ok
}

// validPattern reports whether p is a well-formed repository pattern.
func validPattern(p string) bool {
	_, err := path.Match(p, "")
	return err == nil
}

// mayPull reports whether identity (empty for anonymous) may pull repo.
func (a *authenticator) mayPull(identity, repo string) bool {
	for _, p := range a.cfg.Anonymous {
		if matchRepository(p, repo) {
			return true
		}
	}
	if identity == "" {
		return false
	}
	for _, p := range a.cfg.Users[identity].Repositories {
		if matchRepository(p, repo) {
			return true
		}
	}
	return false
}

// mayPush reports whether identity may push to repo; anonymous clients never may.
func (a *authenticator) mayPush(identity, repo string) bool {
	if identity == "" || !a.mayPull(identity, repo) {
		return false
	}
	return slices.ContainsFunc(a.cfg.Users[identity].Push, func(p string) bool { return matchRepository(p, repo) })
}

// may reports whether identity may do what info needs: pull, or push for writes.
func (a *authenticator) may(identity string, info requestInfo) bool {
	if info.write {
		return a.mayPush(identity, info.repository)
	}
	return a.mayPull(identity, info.repository)
}

// callerKey is the context key of the caller's pull check.
type callerKey struct{}

// withCaller stores identity's pull check in r's context, for listings that filter by it.
func (a *authenticator) withCaller(r *http.Request, identity string) *http.Request {
	mayPull := func(repo string) bool { return a.mayPull(identity, repo) }
	return r.WithContext(context.WithValue(r.Context(), callerKey{}, mayPull))
}

// callerFrom returns the caller's pull check; without auth everyone may pull everything.
func callerFrom(ctx context.Context) func(repo string) bool {
	if f, ok := ctx.Value(callerKey{}).(func(string) bool); ok {
		return f
	}
	return func(string) bool { return true }
}

// errBadCredentials means credentials were sent but do not match a user.
var errBadCredentials = errors.New("invalid username or password")

// basicIdentity returns the user the request's basic credentials name: empty when none (or an empty user
// name, which containers/image sends without credentials) were sent, errBadCredentials when wrong.
func (a *authenticator) basicIdentity(r *http.Request) (string, error) {
	if r.Header.Get("Authorization") == "" {
		return "", nil
	}
	user, pass, ok := r.BasicAuth()
	if !ok {
		return "", errBadCredentials
	}
	if user == "" && pass == "" {
		return "", nil
	}
	u, found := a.cfg.Users[user]
	if !found || subtle.ConstantTimeCompare([]byte(u.Password), []byte(pass)) != 1 {
		return "", errBadCredentials
	}
	return user, nil
}

// wrap returns next behind the configured authentication; in bearer mode it also serves the token
// endpoint.
func (a *authenticator) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info := infoFrom(r.Context())
		switch a.cfg.Mode {
		case AuthBasic:
			a.serveBasic(w, r, info, next)
		case AuthBearer:
			if info.kind == KindToken {
				a.serveToken(w, r)
				return
			}
			a.serveBearer(w, r, info, next)
		default:
			next.ServeHTTP(w, r)
		}
	})
}

// serveBasic enforces basic authentication.
func (a *authenticator) serveBasic(w http.ResponseWriter, r *http.Request, info requestInfo, next http.Handler) {
	identity, err := a.basicIdentity(r)
	if err != nil {
		a.challengeBasic(w, err.Error())
		return
	}
	switch {
	case info.repository == "" && identity != "":
		next.ServeHTTP(w, a.withCaller(r, identity))
	case info.repository == "":
		a.challengeBasic(w, "authentication required")
	case a.may(identity, info):
		next.ServeHTTP(w, a.withCaller(r, identity))
	case identity == "":
		a.challengeBasic(w, "authentication required")
	default:
		writeRegistryError(w, http.StatusForbidden, codeDenied,
			fmt.Sprintf("user %q may not %s repository %q", identity, action(info), info.repository))
	}
}

// challengeBasic answers 401 with a basic challenge.
func (a *authenticator) challengeBasic(w http.ResponseWriter, message string) {
	w.Header().Set("WWW-Authenticate", `Basic realm="`+a.cfg.Service+`"`)
	writeRegistryError(w, http.StatusUnauthorized, codeUnauthorized, message)
}

// serveBearer enforces bearer tokens issued by serveToken.
func (a *authenticator) serveBearer(w http.ResponseWriter, r *http.Request, info requestInfo, next http.Handler) {
	raw, hasToken := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !hasToken {
		a.challengeBearer(w, r, info, "", "authentication required")
		return
	}
	claims, err := a.verifyToken(raw, time.Now())
	if err != nil {
		a.challengeBearer(w, r, info, "invalid_token", err.Error())
		return
	}
	granted := claims.Pull
	if info.write {
		granted = claims.Push
	}
	switch {
	case info.repository == "" && (info.kind == KindPing || claims.Subject != ""):
		next.ServeHTTP(w, a.withCaller(r, claims.Subject))
	case info.repository == "":
		a.challengeBearer(w, r, info, "insufficient_scope", "authentication required")
	case slices.Contains(granted, info.repository):
		next.ServeHTTP(w, a.withCaller(r, claims.Subject))
	default:
		a.challengeBearer(w, r, info, "insufficient_scope",
			fmt.Sprintf("token does not grant %s on repository %q", action(info), info.repository))
	}
}

// action names what a request needs: pull, or push for writes.
func action(info requestInfo) string {
	if info.write {
		return "push"
	}
	return "pull"
}

// challengeBearer answers 401 with a bearer challenge naming the token endpoint on the host the client
// used, the scope the request needs and an optional error.
func (a *authenticator) challengeBearer(w http.ResponseWriter, r *http.Request, info requestInfo, errCode, message string) {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	c := fmt.Sprintf(`Bearer realm="%s://%s%s",service="%s"`, scheme, r.Host, tokenPath, a.cfg.Service)
	switch {
	case info.repository != "" && info.write:
		c += fmt.Sprintf(`,scope="repository:%s:pull,push"`, info.repository)
	case info.repository != "":
		c += fmt.Sprintf(`,scope="repository:%s:pull"`, info.repository)
	}
	if errCode != "" {
		c += fmt.Sprintf(`,error="%s"`, errCode)
	}
	w.Header().Set("WWW-Authenticate", c)
	writeRegistryError(w, http.StatusUnauthorized, codeUnauthorized, message)
}

// tokenClaims is the signed content of a token.
type tokenClaims struct {
	// Subject is the user name, empty for anonymous tokens.
	Subject string `json:"sub"`
	// Pull lists the repositories the token may pull.
	Pull []string `json:"pull"`
	// Push lists the repositories the token may push to.
	Push []string `json:"push,omitempty"`
	// Expires is the Unix time the token expires.
	Expires int64 `json:"exp"`
}

// tokenResponse is the token endpoint's JSON answer (Docker token spec).
type tokenResponse struct {
	Token       string `json:"token"`
	AccessToken string `json:"access_token"`
	ExpiresIn   int    `json:"expires_in"`
	IssuedAt    string `json:"issued_at"`
}

// serveToken issues a token for the requested scopes the caller may have; wrong credentials are 401.
func (a *authenticator) serveToken(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		writeRegistryError(w, http.StatusMethodNotAllowed, codeUnsupported, "token endpoint supports GET only")
		return
	}
	identity, err := a.basicIdentity(r)
	if err != nil {
		w.Header().Set("WWW-Authenticate", `Basic realm="`+a.cfg.Service+`"`)
		writeRegistryError(w, http.StatusUnauthorized, codeUnauthorized, err.Error())
		return
	}
	now := time.Now()
	claims := tokenClaims{Subject: identity, Pull: []string{}, Expires: now.Add(a.cfg.TokenTTL).Unix()}
	for _, scopes := range r.URL.Query()["scope"] {
		for scope := range strings.FieldsSeq(scopes) {
			repo, actions, ok := parseRepositoryScope(scope)
			if !ok {
				continue
			}
			if slices.Contains(actions, "pull") && a.mayPull(identity, repo) && !slices.Contains(claims.Pull, repo) {
				claims.Pull = append(claims.Pull, repo)
			}
			if slices.Contains(actions, "push") && a.mayPush(identity, repo) && !slices.Contains(claims.Push, repo) {
				claims.Push = append(claims.Push, repo)
			}
		}
	}
	token, err := a.signToken(claims)
	if err != nil {
		writeRegistryError(w, http.StatusInternalServerError, codeInternal, "issuing token failed")
		return
	}
	body, err := json.Marshal(tokenResponse{
		Token: token, AccessToken: token,
		ExpiresIn: int(a.cfg.TokenTTL / time.Second), IssuedAt: now.UTC().Format(time.RFC3339),
	})
	if err != nil {
		writeRegistryError(w, http.StatusInternalServerError, codeInternal, "issuing token failed")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

// parseRepositoryScope parses "repository:<name>:<action>[,<action>…]".
func parseRepositoryScope(scope string) (repo string, actions []string, ok bool) {
	rest, ok := strings.CutPrefix(scope, "repository:")
	if !ok {
		return "", nil, false
	}
	i := strings.LastIndexByte(rest, ':')
	if i <= 0 {
		return "", nil, false
	}
	return rest[:i], strings.Split(rest[i+1:], ","), true
}

// signToken encodes claims as base64url(JSON) "." base64url(HMAC-SHA256).
func (a *authenticator) signToken(c tokenClaims) (string, error) {
	payload, err := json.Marshal(c)
	if err != nil {
		return "", fmt.Errorf("encoding token: %w", err)
	}
	p := base64.RawURLEncoding.EncodeToString(payload)
	return p + "." + base64.RawURLEncoding.EncodeToString(a.mac(p)), nil
}

// verifyToken checks a token's signature and expiry and returns its claims.
func (a *authenticator) verifyToken(token string, now time.Time) (tokenClaims, error) {
	p, sig, ok := strings.Cut(token, ".")
	if !ok {
		return tokenClaims{}, errors.New("malformed token")
	}
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || !hmac.Equal(got, a.mac(p)) {
		return tokenClaims{}, errors.New("invalid token signature")
	}
	payload, err := base64.RawURLEncoding.DecodeString(p)
	if err != nil {
		return tokenClaims{}, errors.New("malformed token")
	}
	var c tokenClaims
	if err := json.Unmarshal(payload, &c); err != nil {
		return tokenClaims{}, errors.New("malformed token")
	}
	if now.Unix() >= c.Expires {
		return tokenClaims{}, errors.New("token expired")
	}
	return c, nil
}

// mac computes the token signature of payload.
func (a *authenticator) mac(payload string) []byte {
	h := hmac.New(sha256.New, a.key)
	h.Write([]byte(payload))
	return h.Sum(nil)
}
