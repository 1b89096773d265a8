//! `medialib lti consumer …`: the LTI 1.1 consumers (LMSs) that may launch medialib.

use std::io::Write as _;

use medialib_domain::lti::v1p3::{Platform, UniqueIdClaim};
use medialib_ports::LtiConsumer;
use medialib_ports::Services;
use medialib_ports::services::lti::{AddConsumerFailed, AddPlatformFailed, Lti13Failed};
use serde_json::json;

use crate::admin::AdminError;

/// The launch URLs an LMS is configured with, from the service's public base URL.
fn launch_urls(services: &Services) -> (String, String) {
    let base = services.settings().issuer.as_str().trim_end_matches('/');
    (format!("{base}/api/lti/"), format!("{base}/api/ltix/"))
}

fn consumer_json(c: &LtiConsumer) -> serde_json::Value {
    json!({
        "key": c.key,
        "name": c.name,
        "created_at": c.created_at.epoch_seconds(),
    })
}

/// `medialib lti consumer add --name NAME`: prints the key and, once only, the secret.
pub fn consumer_add(services: &Services, name: &str, json: bool) -> Result<(), AdminError> {
    let consumer = services.lti().add_consumer(name).map_err(|e| match e {
        AddConsumerFailed::BadName => AdminError::Invalid(format!("--name: {e}")),
        AddConsumerFailed::Store(s) => s.into(),
    })?;
    let (warpwire, content_item) = launch_urls(services);
    let mut out = std::io::stdout().lock();
    if json {
        let mut value = consumer_json(&consumer);
        value["secret"] = json!(consumer.secret.expose());
        value["launch_url"] = json!(warpwire);
        value["content_item_url"] = json!(content_item);
        writeln!(out, "{value}")?;
        return Ok(());
    }
    writeln!(out, "registered LTI consumer \"{}\"", consumer.name)?;
    writeln!(out, "  consumer key:  {}", consumer.key)?;
    writeln!(
        out,
        "  shared secret: {}  (shown once: enter it in the LMS, keep it nowhere else)",
        consumer.secret.expose()
    )?;
    writeln!(out, "  launch URL for Warpwire's plugins: {warpwire}")?;
    writeln!(
        out,
        "  launch URL for Content-Item (LTI 1.1) tools: {content_item}"
    )?;
    writeln!(out, "see docs/lti.md for each LMS's settings")?;
    Ok(())
}

/// `medialib lti consumer list`.
pub fn consumer_list(services: &Services, json: bool) -> Result<(), AdminError> {
    let consumers = services.lti().consumers()?;
    let mut out = std::io::stdout().lock();
    if json {
        let list: Vec<_> = consumers.iter().map(consumer_json).collect();
        writeln!(out, "{}", serde_json::Value::Array(list))?;
        return Ok(());
    }
    if consumers.is_empty() {
        writeln!(
            out,
            "no LTI consumers yet: register one with `medialib lti consumer add --name NAME`"
        )?;
    }
    for c in &consumers {
        writeln!(out, "{}  {}", c.key, c.name)?;
    }
    Ok(())
}

/// `medialib lti consumer remove KEY`.
pub fn consumer_remove(services: &Services, key: &str, json: bool) -> Result<(), AdminError> {
    if !services.lti().remove_consumer(key)? {
        return Err(AdminError::Failed(format!(
            "no LTI consumer with key {key}"
        )));
    }
    let mut out = std::io::stdout().lock();
    if json {
        writeln!(out, "{}", json!({ "removed": key }))?;
    } else {
        writeln!(
            out,
            "removed LTI consumer {key}: its launches are refused from now on (course libraries stay)"
        )?;
    }
    Ok(())
}

/// What `medialib lti platform add` is given.
#[derive(Debug, Clone, clap::Args)]
pub struct PlatformOptions {
    /// The platform's issuer (`iss`), an http(s) URL
    #[arg(long)]
    pub issuer: String,
    /// The client id the platform gave medialib
    #[arg(long = "client-id")]
    pub client_id: String,
    /// A deployment id of medialib on the platform; repeat for several
    #[arg(long = "deployment-id", value_name = "ID", required = true)]
    pub deployment_ids: Vec<String>,
    /// The platform's OIDC authorization endpoint
    #[arg(long = "auth-url")]
    pub auth_url: String,
    /// The platform's OAuth 2.0 token endpoint
    #[arg(long = "token-url")]
    pub token_url: String,
    /// Where the platform publishes its keys (JWKS)
    #[arg(long = "jwks-url")]
    pub jwks_url: String,
    /// The claim that names the person: `sub` (keyed by the client id), or one the SSO also
    /// uses (`email`, `preferred_username`, `lis.person_sourcedid`)
    #[arg(long = "unique-id-claim", default_value = "sub")]
    pub unique_id_claim: String,
}

fn platform_json(p: &Platform) -> serde_json::Value {
    json!({
        "issuer": p.issuer,
        "client_id": p.client_id,
        "deployment_ids": p.deployments,
        "auth_url": p.auth_url,
        "token_url": p.token_url,
        "jwks_url": p.jwks_url,
        "unique_id_claim": p.unique_id_claim.as_str(),
    })
}

/// `medialib lti platform add`: registers an LTI 1.3 platform.
pub fn platform_add(
    services: &Services,
    options: PlatformOptions,
    json: bool,
) -> Result<(), AdminError> {
    let unique_id_claim = UniqueIdClaim::parse(&options.unique_id_claim).ok_or_else(|| {
        AdminError::Invalid("--unique-id-claim: a claim name (sub, email, …)".into())
    })?;
    let platform = Platform {
        issuer: options.issuer,
        client_id: options.client_id,
        deployments: options.deployment_ids,
        auth_url: options.auth_url,
        token_url: options.token_url,
        jwks_url: options.jwks_url,
        unique_id_claim,
    };
    let platform = services.lti().add_platform(platform).map_err(|e| match e {
        AddPlatformFailed::Invalid(e) => AdminError::Invalid(e.to_string()),
        AddPlatformFailed::Exists => AdminError::Failed(e.to_string()),
        AddPlatformFailed::Store(s) => s.into(),
    })?;
    let mut out = std::io::stdout().lock();
    if json {
        writeln!(out, "{}", platform_json(&platform))?;
        return Ok(());
    }
    writeln!(
        out,
        "registered LTI 1.3 platform {} (client id {}, deployments {})",
        platform.issuer,
        platform.client_id,
        platform.deployments.join(", ")
    )?;
    let base = services.settings().issuer.as_str().trim_end_matches('/');
    writeln!(out, "give the platform these values for medialib:")?;
    writeln!(out, "  login URL (OIDC initiation):  {base}/api/lti/login")?;
    writeln!(out, "  launch / redirect URL:        {base}/api/lti/launch")?;
    writeln!(out, "  Deep Linking URL:             {base}/api/lti/launch")?;
    writeln!(out, "  public key set (JWKS) URL:    {base}/api/lti/jwks")?;
    Ok(())
}

/// `medialib lti key rotate`.
pub fn key_rotate(services: &Services, json: bool) -> Result<(), AdminError> {
    let key = services.lti().rotate_key().map_err(|e| match e {
        Lti13Failed::Store(s) => s.into(),
        other => AdminError::Failed(other.to_string()),
    })?;
    let jwks_url = format!(
        "{}/api/lti/jwks",
        services.settings().issuer.as_str().trim_end_matches('/')
    );
    let mut out = std::io::stdout().lock();
    if json {
        writeln!(out, "{}", json!({ "kid": key.kid, "jwks_url": jwks_url }))?;
    } else {
        writeln!(
            out,
            "new LTI signing key {}: it signs from now on; the one before stays published at {jwks_url}",
            key.kid
        )?;
    }
    Ok(())
}

/// `medialib lti platform list`.
pub fn platform_list(services: &Services, json: bool) -> Result<(), AdminError> {
    let platforms = services.lti().platforms()?;
    let mut out = std::io::stdout().lock();
    if json {
        let list: Vec<_> = platforms.iter().map(platform_json).collect();
        writeln!(out, "{}", serde_json::Value::Array(list))?;
        return Ok(());
    }
    if platforms.is_empty() {
        writeln!(
            out,
            "no LTI 1.3 platforms yet: register one with `medialib lti platform add`"
        )?;
    }
    for p in &platforms {
        writeln!(
            out,
            "{}  client id {}  deployments {}  uniqueId from {}",
            p.issuer,
            p.client_id,
            p.deployments.join(","),
            p.unique_id_claim.as_str()
        )?;
    }
    Ok(())
}

/// `medialib lti platform remove --issuer ISS --client-id ID`.
pub fn platform_remove(
    services: &Services,
    issuer: &str,
    client_id: &str,
    json: bool,
) -> Result<(), AdminError> {
    if !services.lti().remove_platform(issuer, client_id)? {
        return Err(AdminError::Failed(format!(
            "no LTI 1.3 platform with issuer {issuer} and client id {client_id}"
        )));
    }
    let mut out = std::io::stdout().lock();
    if json {
        writeln!(
            out,
            "{}",
            json!({ "removed": { "issuer": issuer, "client_id": client_id } })
        )?;
    } else {
        writeln!(
            out,
            "removed LTI 1.3 platform {issuer} (client id {client_id})"
        )?;
    }
    Ok(())
}
