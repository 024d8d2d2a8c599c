"""The ground under a retargeted clip: foot contact from the motion (:mod:`.contact`), the support
geometry it implies (:mod:`.terrain`), sole points of the model's feet (:mod:`.soles`), the ground
measured on the model (:mod:`.surface`) and held by the IK (:mod:`.constraint`)."""
