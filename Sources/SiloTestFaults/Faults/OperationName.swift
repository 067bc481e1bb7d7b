/// The operation names storage-testbench's upload faults are tied to: the API names every operation itself
/// (``RouteTarget/operationID(_:)``).
enum OperationName {
    static let objectsInsert = "storage.objects.insert"
}
