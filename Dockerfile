# ferroscale's container image: built with the Rust toolchain, run on distroless (glibc, CA certificates,
# no shell) as the non-root user 65532. The binary links glibc dynamically (aws-lc-sys), hence the `cc`
# variant rather than `static`.
#
#   docker build -t ghcr.io/ferroscale/ferroscale:0.1.0 .
FROM rust:1.94-bookworm AS build
WORKDIR /src
COPY Cargo.toml Cargo.lock build.rs ./
COPY proto proto
COPY crates crates
COPY src src
COPY benches benches
COPY tests tests
RUN cargo build --release --locked --bin ferroscale \
 && cp target/release/ferroscale /ferroscale

FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /ferroscale /usr/local/bin/ferroscale
USER 65532:65532
EXPOSE 8085 8086 8087
ENTRYPOINT ["/usr/local/bin/ferroscale"]
# The chart passes the command and its flags; without them the image prints its usage.
CMD ["--help"]
