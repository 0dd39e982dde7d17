# The release image goreleaser builds around the binary it built
# (goreleaser.yaml, dockers): the layout of ../Dockerfile, whose build stage
# gives only the CA roots and the data directory here.
FROM golang:1.26 AS base
RUN mkdir -p /out/data

FROM scratch
COPY --from=base /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY trovesnap /trovesnap
COPY --from=base --chown=65532:65532 /out/data /data
USER 65532:65532
ENV HOME=/data TROVESNAP_DB=/data/trovesnap.db
VOLUME /data
EXPOSE 8080
ENTRYPOINT ["/trovesnap", "mcp", "serve", "--http", ":8080", "--behind-proxy", "--stateless"]
