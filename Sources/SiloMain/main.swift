print("silo")
