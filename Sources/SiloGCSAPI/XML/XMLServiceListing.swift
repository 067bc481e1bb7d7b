import SiloCore
import SiloHTTP
import SiloServerKit

extension XMLRoutes {
    /// Whether a `GET /` (path style: no bucket in the Host) is the XML API's bucket listing rather than the emulator
    /// probe. GCS's XML API lists a project's buckets when the request names the project in `x-goog-project-id`, as
    /// gsutil's `ls` in XML mode always does; the probe (firebase-tools, health checks) never sends that header, so
    /// the header alone tells them apart and the probe answers as before.
    static func listsBuckets(_ head: HTTPRequestHead) -> Bool {
        (head.method == "GET" || head.method == "HEAD") && head.headers["x-goog-project-id"] != nil
    }

    /// `GET /` with `x-goog-project-id`: `<ListAllMyBucketsResult>` of the buckets the JSON API lists for that
    /// project.
    package func buckets(_ context: RequestContext) -> HTTPResponse {
        do {
            let records = try GCSBucketRoutes(service: service).listed(project: context.headers["x-goog-project-id"])
            var xml = XMLWriter()
            xml.element("ListAllMyBucketsResult", attributes: ["xmlns": "http://doc.s3.amazonaws.com/2006-03-01"]) {
                xml in
                xml.element("Owner") { $0.element("ID", "project-owners-\(ProjectACL.projectNumber)") }
                xml.element("Buckets") { xml in
                    for record in records {
                        xml.element("Bucket") { xml in
                            xml.element("Name", record.name.rawValue)
                            xml.element("CreationDate", record.timeCreated.rfc3339)
                        }
                    }
                }
            }
            return Reply.xml(200, xml.text)
        } catch {
            return Reply.xmlError(error)
        }
    }
}
