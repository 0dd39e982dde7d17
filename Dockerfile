# trovesnap's HTTP server in a container (docs/deploy.md).
#
#   docker build -t trovesnap .
#   docker run -p 8080:8080 -e SUPABASE_URL=… -e SUPABASE_ANON_KEY=… trovesnap --public-url https://mcp.example.com
#
# A static binary (pure Go: modernc SQLite, CGO off) on an empty image: no
# shell, no package manager, nothing but the binary, the CA roots live mode
# needs to reach Supabase over TLS, and a data directory owned by the
# unprivileged user it runs as.

FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
ARG COMMIT=unknown
RUN CGO_ENABLED=0 go build -trimpath \
      -ldflags "-s -w -X github.com/triunalabs/trovesnap/internal/buildinfo.Version=${VERSION} -X github.com/triunalabs/trovesnap/internal/buildinfo.Commit=${COMMIT}" \
      -o /out/trovesnap ./cmd/trovesnap \
 && mkdir -p /out/data

FROM scratch
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /out/trovesnap /trovesnap
COPY --from=build --chown=65532:65532 /out/data /data
# Not root: a numeric user, as the empty image has no passwd file.
USER 65532:65532
ENV HOME=/data TROVESNAP_DB=/data/trovesnap.db
VOLUME /data
EXPOSE 8080
# Behind the platform's TLS-terminating proxy, sessionless so any replica
# answers any request; give --public-url (the URL clients use) as the
# container's arguments.
ENTRYPOINT ["/trovesnap", "mcp", "serve", "--http", ":8080", "--behind-proxy", "--stateless"]
