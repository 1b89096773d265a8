use super::*;

#[test]
fn is_openapi_3_1_with_the_bearer_scheme() {
    let doc = document().unwrap();
    assert!(doc["openapi"].as_str().unwrap().starts_with("3.1."));
    assert_eq!(
        doc.pointer("/components/securitySchemes/bearer/scheme"),
        Some(&json!("bearer"))
    );
}

#[test]
fn every_fixed_value_finds_its_field() {
    let doc = document().unwrap();
    for (schema, property, values) in FIXED_VALUES {
        let p = doc
            .pointer(&format!(
                "/components/schemas/{schema}/properties/{property}"
            ))
            .unwrap_or_else(|| panic!("{schema}.{property} is not in the document"));
        assert_eq!(p["enum"], json!(values), "{schema}.{property}");
    }
}

#[test]
fn response_records_and_forms_are_closed() {
    let doc = document().unwrap();
    let schemas = &doc["components"]["schemas"];
    for name in ["DescribeRecord", "LimitedRecord", "UuidBody", "ErrorBody"] {
        assert_eq!(
            schemas[name]["additionalProperties"],
            json!(false),
            "{name}"
        );
    }
    // Forms are closed: an unknown field is a 400.
    assert_eq!(
        schemas["DescribeForm"]["additionalProperties"],
        json!(false)
    );
    assert_eq!(
        schemas["LimitedRecord"]["properties"]["public"]["enum"],
        json!(["true", "false"])
    );
}

#[test]
fn property_limits_are_stated() {
    let doc = document().unwrap();
    let p = &doc["components"]["schemas"]["DescribeForm"]["properties"]["properties"];
    assert_eq!(p["maxProperties"], 64);
    assert_eq!(p["propertyNames"]["maxLength"], 64);
    assert_eq!(
        p["propertyNames"]["pattern"],
        "^[^\\u0000-\\u001f\\u007f-\\u009f]+$"
    );
    assert_eq!(p["additionalProperties"]["maxLength"], 4096);
}

#[test]
fn urlencoded_properties_are_deep_objects() {
    let doc = document().unwrap();
    let form = doc
        .pointer(
            "/paths/~1api~1describe~1c~1{collection_uuid}~1o~1{object_uuid}/put/requestBody/content/application~1x-www-form-urlencoded",
        )
        .unwrap();
    assert_eq!(form["encoding"]["properties"]["style"], "deepObject");
}

/// The operations whose body is no form, or a form in one encoding only: a tus PATCH
/// body, the one-shot upload's file, and the consent page's urlencoded form.
const RAW_BODIES: [&str; 3] = ["upload_patch", "upload_put", "oauth_authorize_post"];

#[test]
fn every_request_body_is_offered_in_each_form_encoding() {
    let doc = document().unwrap();
    let mut bodies = 0;
    for op in operations(&doc) {
        let Some(content) = op.pointer("/requestBody/content") else {
            continue;
        };
        if RAW_BODIES.contains(&op["operationId"].as_str().unwrap_or("")) {
            continue;
        }
        bodies += 1;
        let keys: Vec<&str> = content
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        let mut expected = FORM_ENCODINGS.to_vec();
        expected.sort_unstable();
        assert_eq!(keys, expected, "{}", op["operationId"]);
        let schemas: Vec<&Value> = FORM_ENCODINGS
            .iter()
            .map(|e| &content[*e]["schema"])
            .collect();
        assert!(
            schemas.iter().all(|s| *s == schemas[0]),
            "{}",
            op["operationId"]
        );
    }
    assert!(
        bodies >= 6,
        "the forms of describe, user, permission and info"
    );
}

#[test]
fn optional_bodies_are_marked() {
    let doc = document().unwrap();
    let mut found = 0;
    for item in doc["paths"].as_object().unwrap().values() {
        for op in item.as_object().unwrap().values() {
            let id = op["operationId"].as_str().unwrap();
            if let Some(required) = op.pointer("/requestBody/required") {
                assert_eq!(required, &json!(!OPTIONAL_BODIES.contains(&id)), "{id}");
                found += usize::from(OPTIONAL_BODIES.contains(&id));
            }
        }
    }
    assert_eq!(found, OPTIONAL_BODIES.len());
}

#[test]
fn options_take_zero_where_the_methods_disagree() {
    let doc = document().unwrap();
    let describe = &doc["paths"]["/api/describe/c/{collection_uuid}/o/{object_uuid}"];
    let pattern =
        |method: &str, i: usize| describe[method]["parameters"][i]["schema"]["pattern"].clone();
    let id_or_zero =
        serde_json::to_value(schemas::UuidOrZero::schema()).unwrap()["pattern"].clone();
    assert_eq!(pattern("put", 1), json!("^0$"));
    assert_eq!(pattern("put", 0), id_or_zero);
    assert_eq!(pattern("options", 0), id_or_zero);
    assert_eq!(pattern("options", 1), id_or_zero);
    let info = &doc["paths"]["/api/info/c/{collection_uuid}/o/{object_id}"];
    assert_eq!(info["options"]["parameters"], info["get"]["parameters"]);
}

#[test]
fn a_post_that_is_its_put_is_documented_as_such() {
    let doc = document().unwrap();
    for (path, id, summary) in SAME_AS_PUT {
        let item = &doc["paths"][path];
        assert_eq!(item["post"]["operationId"], id, "{path}");
        assert_eq!(item["post"]["summary"], summary, "{path}");
        assert_eq!(
            item["post"]["responses"], item["put"]["responses"],
            "{path}"
        );
        assert_eq!(item["post"].get("description"), None, "{path}");
    }
}

#[test]
fn every_api_path_answers_options() {
    let doc = document().unwrap();
    for (path, item) in doc["paths"].as_object().unwrap() {
        if path.starts_with("/api/") && path != DOCUMENT_PATH {
            assert!(item.get("options").is_some(), "{path}");
        }
    }
}

#[test]
fn operation_ids_are_unique() {
    let doc = document().unwrap();
    let mut ids: Vec<&str> = operations(&doc)
        .filter_map(|op| op.get("operationId").and_then(Value::as_str))
        .collect();
    let count = ids.len();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), count, "{ids:?}");
}

#[test]
fn the_authorization_server_and_logout_are_documented() {
    let doc = document().unwrap();
    let paths = &doc["paths"];
    for (path, method, id) in [
        ("/api/oauth/authorize", "get", "oauth_authorize_get"),
        ("/api/oauth/authorize", "post", "oauth_authorize_post"),
        ("/api/oauth/access_token", "post", "oauth_token"),
        ("/api/oauth/revoke", "post", "oauth_revoke"),
        ("/api/oauth/introspect", "post", "oauth_introspect"),
        (
            "/.well-known/oauth-authorization-server",
            "get",
            "oauth_metadata",
        ),
        ("/api/logout", "post", "logout_post"),
    ] {
        assert_eq!(paths[path][method]["operationId"], id, "{method} {path}");
    }
    // The client endpoints: HTTP Basic or the body (no scheme: `{}`), RFC 6749 errors,
    // forms that ignore unknown parameters.
    let schemes = &doc["components"]["securitySchemes"];
    assert_eq!(schemes["client_basic"]["scheme"], "basic");
    assert_eq!(schemes["session"]["in"], "cookie");
    assert_eq!(schemes["session"]["name"], "medialib_session");
    for path in [
        "/api/oauth/access_token",
        "/api/oauth/revoke",
        "/api/oauth/introspect",
    ] {
        let op = &paths[path]["post"];
        assert_eq!(op["security"], json!([{"client_basic": []}, {}]), "{path}");
        assert_eq!(
            op["responses"]["401"]["$ref"], "#/components/responses/InvalidClient",
            "{path}"
        );
        assert!(
            op.pointer("/requestBody/content/application~1x-www-form-urlencoded")
                .is_some(),
            "{path}"
        );
    }
    let schemas = &doc["components"]["schemas"];
    assert_eq!(schemas["TokenForm"]["additionalProperties"], json!(true));
    assert_eq!(
        schemas["TokenForm"]["properties"]["grant_type"]["$ref"],
        "#/components/schemas/GrantType"
    );
    assert_eq!(schemas["OAuthError"]["additionalProperties"], json!(false));
    assert!(
        doc.pointer("/components/responses/InvalidClient/headers/WWW-Authenticate")
            .is_some()
    );
    // The authorization endpoint: pages as HTML, redirects with Location, and the token
    // record as JSON.
    let get = &paths["/api/oauth/authorize"]["get"];
    assert!(get.pointer("/responses/200/content/text~1html").is_some());
    assert_eq!(
        get.pointer("/responses/200/content/application~1json/schema/$ref"),
        Some(&json!("#/components/schemas/TokenInfo"))
    );
    assert!(get.pointer("/responses/302/headers/Location").is_some());
    assert!(get.pointer("/responses/400/content/text~1html").is_some());
    let post = &paths["/api/oauth/authorize"]["post"];
    assert!(post.pointer("/responses/303/headers/Location").is_some());
    assert_eq!(post["security"], json!([{"session": []}]));
    for status in ["400", "401", "403", "413", "503"] {
        assert!(
            post.pointer(&format!("/responses/{status}/content/text~1html"))
                .is_some(),
            "{status}"
        );
    }
    let logout = &paths["/api/logout"]["post"];
    assert_eq!(
        logout["responses"]["200"]["content"]["application/json"]["schema"]["$ref"],
        "#/components/schemas/LogoutRecord"
    );
    assert_eq!(
        logout["security"],
        json!([{"bearer": []}, {"oauth2": []}, {"session": []}])
    );
}

/// The parameters of an operation, by location and name.
fn parameter_names(op: &Value) -> Vec<(String, String)> {
    op["parameters"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| {
            (
                p["in"].as_str().unwrap().to_owned(),
                p["name"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[test]
fn every_create_operation_links_to_the_operations_on_what_it_created() {
    let doc = document().unwrap();
    let by_id = |id: &str| {
        operations(&doc)
            .find(|op| op.get("operationId").and_then(Value::as_str) == Some(id))
            .unwrap_or_else(|| panic!("no operation {id}"))
    };
    // The operations that create something with an id, and what their links must reach at
    // least: read, update, media, delete.
    let expected: [(&str, &[&str]); 4] = [
        (
            "describe_put",
            &[
                "describe_get",
                "describe_post",
                "info_get",
                "media_get",
                "media_delete",
                "catalog_delete",
                "catalog_get",
                "describe_put",
            ],
        ),
        (
            "upload_put",
            &[
                "describe_get",
                "describe_post",
                "media_get",
                "media_delete",
                "catalog_delete",
            ],
        ),
        (
            "upload_create",
            &[
                "describe_get",
                "media_get",
                "upload_status",
                "upload_patch",
                "upload_terminate",
            ],
        ),
        (
            "user_post",
            &[
                "user_get",
                "user_post",
                "permission_get",
                "permission_delete",
            ],
        ),
    ];
    assert_eq!(
        expected.map(|(id, _)| id).to_vec(),
        links::SOURCES
            .iter()
            .map(|(id, _, _)| *id)
            .collect::<Vec<_>>()
    );
    let mut count = 0;
    for (source_id, targets) in expected {
        let source = by_id(source_id);
        let created = source["responses"]["201"]
            .get("links")
            .and_then(Value::as_object)
            .unwrap_or_else(|| panic!("{source_id}: its 201 has no links"));
        let reached: Vec<&str> = created
            .values()
            .map(|l| l["operationId"].as_str().unwrap())
            .collect();
        for target in targets {
            assert!(reached.contains(target), "{source_id} -> {target}");
        }
        let source_params = parameter_names(source);
        for (name, link) in created {
            let target = by_id(link["operationId"].as_str().unwrap());
            let target_params = parameter_names(target);
            let parameters = link["parameters"].as_object().unwrap();
            // Every path parameter of the target is filled, and only parameters it has.
            let path_params = target_params.iter().filter(|(at, _)| at == "path").count();
            assert_eq!(parameters.len(), path_params, "{source_id} {name}");
            for (param, value) in parameters {
                assert!(
                    target_params.contains(&("path".to_owned(), param.clone())),
                    "{source_id} {name}: {param}"
                );
                let value = value.as_str().unwrap();
                if let Some(from) = value.strip_prefix("$request.path.") {
                    assert!(
                        source_params.contains(&("path".to_owned(), from.to_owned())),
                        "{source_id} {name}: {value}"
                    );
                } else if let Some(pointer) = value.strip_prefix("$response.body#") {
                    let schema = source
                        .pointer("/responses/201/content/application~1json/schema/$ref")
                        .and_then(Value::as_str)
                        .and_then(|r| r.strip_prefix('#'))
                        .and_then(|r| doc.pointer(r))
                        .unwrap_or_else(|| panic!("{source_id}: no 201 body schema"));
                    let field = pointer.trim_start_matches('/');
                    assert!(
                        schema["required"]
                            .as_array()
                            .is_some_and(|r| r.contains(&json!(field))),
                        "{source_id} {name}: {value}"
                    );
                } else {
                    assert_eq!(value, "0", "{source_id} {name}");
                }
            }
            count += 1;
        }
    }
    assert!(count >= 30, "{count} links");
}
