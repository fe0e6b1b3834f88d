//! https targets: a rustls client (ring) that trusts the Mozilla roots (webpki-roots), plus any
//! CA certificates the user gives, or — when asked, as load generators usually are run against
//! test servers — any certificate at all.

use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{ring, verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use tokio_rustls::TlsConnector;

use crate::ReplayError;

/// How the server's certificate is checked.
#[derive(Debug, Clone, Default)]
pub struct TlsOptions {
    /// PEM certificates trusted beside the Mozilla roots (a private CA, a self-signed server).
    pub ca_pem: Option<Vec<u8>>,
    /// Accept any certificate (the connection is still encrypted).
    pub insecure: bool,
}

pub(crate) fn connector(options: &TlsOptions) -> Result<TlsConnector, ReplayError> {
    let provider = Arc::new(ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| ReplayError::Target(format!("TLS set-up: {e}")))?;
    let mut config = if options.insecure {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AnyCertificate(provider)))
            .with_no_client_auth()
    } else {
        let mut roots = RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
        };
        if let Some(pem) = &options.ca_pem {
            let certs = CertificateDer::pem_slice_iter(pem)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| ReplayError::Target(format!("the CA file is not PEM: {e}")))?;
            if certs.is_empty() {
                return Err(ReplayError::Target(
                    "the CA file holds no certificate".into(),
                ));
            }
            for cert in certs {
                roots
                    .add(cert)
                    .map_err(|e| ReplayError::Target(format!("a CA certificate: {e}")))?;
            }
        }
        builder.with_root_certificates(roots).with_no_client_auth()
    };
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(TlsConnector::from(Arc::new(config)))
}

/// The name the server's certificate must carry: the target's host, an IP address or a DNS name.
pub(crate) fn server_name(host: &str) -> Result<ServerName<'static>, ReplayError> {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    ServerName::try_from(bare.to_owned())
        .map_err(|_| ReplayError::Target(format!("{host:?} cannot be a TLS server name")))
}

/// `insecure`: the certificate is not checked, the handshake's signatures still are.
#[derive(Debug)]
struct AnyCertificate(Arc<CryptoProvider>);

impl ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
