//! `medialib lti consumer …`: the LTI 1.1 consumers (LMSs) that may launch medialib.

use std::io::Write as _;

use medialib_ports::LtiConsumer;
use medialib_ports::Services;
use medialib_ports::services::lti::AddConsumerFailed;
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
