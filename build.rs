//! Generates the gRPC code for the CloudProvider and Expander protocols.
//! protoc comes from the `protoc-bin-vendored` crate: nothing has to be installed on the machine.
//! Kubernetes messages map to the complete `k8s-pb` types rather than to the import stubs in `proto/k8s.io`.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let protoc = protoc_bin_vendored::protoc_bin_path()?;
    std::env::set_var("PROTOC", protoc);
    let well_known = protoc_bin_vendored::include_path()?;
    tonic_prost_build::configure()
        .build_server(true)
        .build_client(true)
        .extern_path(".k8s.io.api.core.v1", "::k8s_pb::api::core::v1")
        .extern_path(
            ".k8s.io.apimachinery.pkg.apis.meta.v1",
            "::k8s_pb::apimachinery::pkg::apis::meta::v1",
        )
        .compile_protos(
            &["proto/externalgrpc.proto", "proto/expander.proto"],
            &[
                "proto",
                well_known.to_str().ok_or("non-UTF-8 protoc include path")?,
            ],
        )?;
    println!("cargo:rerun-if-changed=proto");
    Ok(())
}
