import SiloCore
import SiloHTTP
import SiloServerKit
import SiloWire

extension XMLRoutes {
    /// `GET /{bucket}?location|storageClass|versioning|lifecycle|cors|billing|logging|website|encryption|tagging`: the
    /// bucket resource the JSON API keeps (``BucketResource``), in the XML documents GCS answers with. Only versioning is written through the XML API
    /// (``putVersioning(_:_:)``); a write of the others is 501, so a client learns to use the JSON API.
    package func bucketConfiguration(_ context: RequestContext, _ bucket: BucketName, _ sub: XMLSubresource)
        -> HTTPResponse
    {
        guard context.method == "GET" || context.method == "HEAD" else {
            if sub == .versioning { return Self.methodNotAllowed(context, allowed: "GET, HEAD, PUT") }
            return Reply.xmlError(
                StorageError(
                    .unimplemented,
                    "\(context.method.prefix(20)) ?\(sub.key) is not implemented by this server; the JSON API's "
                        + "bucket PATCH sets it"))
        }
        return run(bucket) {
            guard let resource = try service.bucketResource(bucket) else { throw StorageError.noSuchBucket(bucket) }
            var xml = XMLWriter()
            switch sub {
            case .location: xml.element("LocationConstraint", resource.location)
            case .storageClass: xml.element("StorageClass", resource.storageClass)
            case .versioning:
                // A bucket never versioned has no status; Silo keeps a flag, so "off" reads as never set.
                if resource.versioning {
                    xml.element("VersioningConfiguration") { $0.element("Status", "Enabled") }
                } else {
                    xml.empty("VersioningConfiguration")
                }
            case .billing:
                let pays = resource.fields["billing"]?.objectValue?["requesterPays"] == .bool(true)
                xml.element("BillingConfiguration") { $0.element("RequesterPays", pays ? "Enabled" : "Disabled") }
            case .lifecycle: Self.lifecycle(resource.fields["lifecycle"], into: &xml)
            case .cors: Self.cors(resource.fields["cors"], into: &xml)
            case .logging:
                let logging = resource.fields["logging"]?.objectValue ?? JSONObject()
                Self.flat("Logging", logging, ["logBucket": "LogBucket", "logObjectPrefix": "LogObjectPrefix"], &xml)
            case .website:
                let website = resource.fields["website"]?.objectValue ?? JSONObject()
                Self.flat(
                    "WebsiteConfiguration", website,
                    ["mainPageSuffix": "MainPageSuffix", "notFoundPage": "NotFoundPage"], &xml)
            case .encryption:
                let encryption = resource.fields["encryption"]?.objectValue ?? JSONObject()
                Self.flat("EncryptionConfiguration", encryption, ["defaultKmsKeyName": "DefaultKmsKeyName"], &xml)
            case .tagging:
                // The bucket's labels, as GCS's XML API shows them.
                let labels = resource.fields["labels"]?.objectValue?.members ?? []
                xml.element("Tagging") { xml in
                    guard !labels.isEmpty else { return xml.empty("TagSet") }
                    xml.element("TagSet") { xml in
                        for (key, value) in labels {
                            xml.element("Tag") { xml in
                                xml.element("Key", key)
                                xml.element("Value", Self.text(value))
                            }
                        }
                    }
                }
            default: throw StorageError(.unimplemented, "?\(sub.key) is not a bucket configuration")
            }
            return Reply.xml(200, xml.text)
        }
    }

    /// `PUT /{bucket}?versioning` with `<VersioningConfiguration><Status>Enabled|Suspended</Status>…`: the JSON
    /// API's PATCH of `versioning.enabled`, within the JSON body bound.
    package func putVersioning(_ context: RequestContext, _ bucket: BucketName) -> RequestDisposition {
        .readBody(
            CollectingSink(limit: service.configuration.maxJSONBodyBytes, refuse: { Reply.xmlError($0) }) { body in
                do {
                    let text = String(decoding: body, as: UTF8.self)[...]
                    guard let configuration = XMLText.elements("VersioningConfiguration", in: text).first,
                        let status = XMLText.value("Status", in: configuration),
                        status == "Enabled" || status == "Suspended"
                    else {
                        throw StorageError(
                            .invalidArgument,
                            "The body must be <VersioningConfiguration><Status>Enabled</Status> (or Suspended)"
                                + "</VersioningConfiguration>")
                    }
                    let enabled: JSONValue = .bool(status == "Enabled")
                    _ = try GCSBucketRoutes(service: service).update(
                        bucket, ["versioning": .object(["enabled": enabled])], replacing: false,
                        conditions: try XMLObjectHeaders.conditions(context.headers), time: context.time)
                    return Reply.empty(200)
                } catch {
                    return Reply.xmlError(error)
                }
            })
    }

    /// The JSON resource's lifecycle conditions and their XML element names.
    private static let lifecycleConditions: KeyValuePairs<String, String> = [
        "age": "Age", "createdBefore": "CreatedBefore", "customTimeBefore": "CustomTimeBefore",
        "daysSinceCustomTime": "DaysSinceCustomTime", "daysSinceNoncurrentTime": "DaysSinceNoncurrentTime",
        "isLive": "IsLive", "matchesPrefix": "MatchesPrefix", "matchesStorageClass": "MatchesStorageClass",
        "matchesSuffix": "MatchesSuffix", "noncurrentTimeBefore": "NoncurrentTimeBefore",
        "numNewerVersions": "NumberOfNewerVersions",
    ]

    /// `<LifecycleConfiguration><Rule><Action><Delete/></Action><Condition><Age>30</Age>…`.
    private static func lifecycle(_ json: JSONValue?, into xml: inout XMLWriter) {
        let rules = json?.objectValue?["rule"]?.arrayValue ?? []
        guard !rules.isEmpty else { return xml.empty("LifecycleConfiguration") }
        xml.element("LifecycleConfiguration") { xml in
            for rule in rules.compactMap(\.objectValue) {
                xml.element("Rule") { xml in
                    let action = rule["action"]?.objectValue
                    xml.element("Action") { xml in
                        let type = action?["type"]?.stringValue ?? "Delete"
                        if let storageClass = action?["storageClass"]?.stringValue {
                            xml.element(type, storageClass)
                        } else {
                            xml.empty(type)
                        }
                    }
                    let condition = rule["condition"]?.objectValue ?? JSONObject()
                    xml.element("Condition") { xml in
                        for (key, element) in lifecycleConditions {
                            guard let value = condition[key] else { continue }
                            for item in value.arrayValue ?? [value] { xml.element(element, text(item)) }
                        }
                    }
                }
            }
        }
    }

    /// `<CorsConfig><Cors><Origins><Origin>…</Origin></Origins><Methods>…<MaxAgeSec>…`.
    private static func cors(_ json: JSONValue?, into xml: inout XMLWriter) {
        let entries = json?.arrayValue?.compactMap(\.objectValue) ?? []
        guard !entries.isEmpty else { return xml.empty("CorsConfig") }
        xml.element("CorsConfig") { xml in
            for entry in entries {
                xml.element("Cors") { xml in
                    for (key, list, item) in [
                        ("origin", "Origins", "Origin"), ("method", "Methods", "Method"),
                        ("responseHeader", "ResponseHeaders", "ResponseHeader"),
                    ] {
                        guard let values = entry[key]?.arrayValue, !values.isEmpty else { continue }
                        xml.element(list) { xml in for value in values { xml.element(item, text(value)) } }
                    }
                    if let age = entry["maxAgeSeconds"] { xml.element("MaxAgeSec", text(age)) }
                }
            }
        }
    }

    /// `<root><Element>value</Element>…</root>` for the `fields` present, or `<root/>`.
    private static func flat(
        _ root: String, _ object: JSONObject, _ fields: KeyValuePairs<String, String>, _ xml: inout XMLWriter
    ) {
        let present = fields.filter { object[$0.key] != nil }
        guard !present.isEmpty else { return xml.empty(root) }
        xml.element(root) { xml in
            for (key, element) in present { xml.element(element, text(object[key]!)) }
        }
    }

    /// A stored scalar as element text.
    private static func text(_ value: JSONValue) -> String {
        switch value {
        case .string(let s): s
        case .number(let n): n
        case .bool(let b): b ? "true" : "false"
        default: ""
        }
    }
}
