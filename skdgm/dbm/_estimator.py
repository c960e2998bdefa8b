class DBMCAST:
    pass
